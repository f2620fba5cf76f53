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
