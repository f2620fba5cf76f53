/** A key prefix's limit: with "-<12-hex stack id>-" and a 100-character revision it fits 255 bytes. */
export const MAX_PREFIX_BYTES = 128;

/**
 * Why a cache prefix, a restore prefix or the action's key input cannot be one: GitHub's key rules
 * (no commas) and a sane length; null when it can. Here, not in the schema, so the CLI checks a
 * --key without loading the schema.
 */
export function keyPartProblem(s: string): string | null {
  if (s.length === 0) return "must not be empty";
  if (s.includes(","))
    return "must not contain a comma (GitHub cache keys cannot): use - or _ instead, e.g. fla-kda-bench";
  if (encodeURIComponent(s).length > MAX_PREFIX_BYTES)
    return `is too long: at most ${MAX_PREFIX_BYTES} bytes once percent-encoded, so that <prefix>-<stack>-<revision> fits a store's 255-byte names; shorten it`;
  return null;
}

/** key.scope's (and --scope's) word for "this runner builds only the default branch" (keys/scope.ts). */
export const DEFAULT_BRANCH_ONLY = "default-branch";

/** Why a declared scope (key.scope, --scope) is not one kcache can write; null when it is. */
export function scopeProblem(scope: string): string | null {
  if (scope === DEFAULT_BRANCH_ONLY) return null;
  const m = /^(branch|tag|pr|untrusted)\/(.+)$/.exec(scope);
  const bad = !m?.[2] || /[\s,]|\.\.|\/\/|\/$/.test(m[2]) || [...scope].some((c) => c.charCodeAt(0) < 0x20);
  if (bad || scope.length > 200)
    return `is not a scope: write ${DEFAULT_BRANCH_ONLY} (this runner builds only the default branch), branch/<name>, tag/<name>, pr/<number> or untrusted/<name>`;
  return null;
}
