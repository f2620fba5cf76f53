import type { RunIdentity } from "./ci-facts.js";
import { fromRefs } from "./git-refs.js";
import { resolveRevision } from "./revision.js";
import { runIdentity } from "./run-identity.js";

/**
 * Where a run may write and read. A pull request writes only its own scope; the default branch never
 * reads a pull request's scope, so a PR cannot poison what main restores. A build kcache cannot place
 * writes a scope of its own (untrusted/...) and reads the default branch's.
 */
export interface ScopePlan {
  /** The scope this run saves into ("pr/123", "branch/main", "tag/v1", "untrusted/<ci>-<build>"). */
  write: string;
  /** Scopes searched on restore, in order: own, then base branch, then default branch. */
  read: string[];
  defaultBranch: string;
  /** What the CI said this build is, and the facts it was read from (`kcache key` shows them). */
  identity: RunIdentity;
  /** Why this build writes an untrusted scope, and how to declare it; null where it was placed. */
  unplaced: string | null;
  /** The scope was declared (key.scope or --scope) and the facts allowed it. */
  declared: boolean;
}

/** The scope the default branch's runs write and everyone reads ("branch/main"). */
export function defaultBranchScope(defaultBranch: string): string {
  return `branch/${defaultBranch}`;
}

/**
 * Whether a scope's runs ran the repository's own code at a branch or tag (push, schedule,
 * workflow_dispatch): only those may evict entries they did not use. A pull request's, an
 * untrusted build's or another ref's scope never does.
 */
export function isTrustedScope(scope: string): boolean {
  return scope.startsWith("branch/") || scope.startsWith("tag/");
}

/**
 * The value of key.scope / --scope that says "this runner builds only the default branch"
 * (config/key-part.ts checks a declared scope's spelling when kcache.yml is loaded).
 */
export const DEFAULT_BRANCH_ONLY = "default-branch";

export interface ScopeOptions {
  /** kcache.yml's key.default-branch. */
  configuredDefault?: string;
  /** A declared scope (key.scope, --scope) and where it was declared, for errors. */
  declared?: { scope: string; source: string };
  cwd: string;
}

/**
 * The scopes of a build from what its CI says (keys/run-identity.ts). A declared scope may take a
 * build to a trusted scope only where no fact says otherwise: never a pull request's build, and a
 * branch only where a fact names it; `default-branch` is the user's word that the runner builds only
 * the default branch, taken where no fact contradicts it. Anything else is a ConfigError-worthy
 * refusal, thrown as `Error` with the message for the caller to wrap.
 */
export function scopePlan(identity: RunIdentity, opts: ScopeOptions): ScopePlan {
  const defaultBranch =
    opts.configuredDefault ?? identity.defaultBranch ?? gitDefaultBranch(opts.cwd) ?? "main";
  const def = defaultBranchScope(defaultBranch);
  const plan = (write: string, extra: string[] = []): ScopePlan => ({
    write,
    read: [...new Set([write, ...extra, def])],
    defaultBranch,
    identity,
    unplaced: null,
    declared: false,
  });
  const placed = placedPlan(identity, plan, def);
  const declared = opts.declared;
  if (!declared) return placed;
  const refusal = declarationRefusal(identity, placed, declared.scope, defaultBranch, opts.cwd);
  if (refusal) throw new ScopeRefusal(`${declared.source}: ${declared.scope} refused: ${refusal}`);
  const scope = declared.scope === DEFAULT_BRANCH_ONLY ? def : declared.scope;
  if (scope === placed.write) return { ...placed, declared: true };
  return { ...plan(scope), declared: true };
}

/** The scopes of the build this environment describes (runIdentity, then scopePlan). */
export async function scopesOf(
  env: NodeJS.ProcessEnv,
  cwd: string,
  opts: Omit<ScopeOptions, "cwd"> = {},
): Promise<ScopePlan> {
  return scopePlan(await runIdentity(env, cwd), { ...opts, cwd });
}

/** A declared scope the facts contradict. */
export class ScopeRefusal extends Error {}

function placedPlan(
  identity: RunIdentity,
  plan: (write: string, extra?: string[]) => ScopePlan,
  def: string,
): ScopePlan {
  const ref = identity.ref;
  switch (ref.kind) {
    case "branch":
      return plan(`branch/${ref.name}`);
    case "tag":
      return plan(`tag/${ref.name}`);
    case "pr":
      return plan(`pr/${ref.id}`, ref.base ? [`branch/${ref.base}`] : []);
    case "ref":
      return plan(`ref/${ref.name}`);
    case "local":
      return plan(def);
    case "unplaced": {
      const write = `untrusted/${ref.name}`;
      const p = plan(write);
      return {
        ...p,
        unplaced: `${identity.system ? `${identity.system}: ` : ""}${ref.reason}: this build saves only into its own scope ${write}, which the default branch never reads. ${
          ref.prSignal
            ? "It may be a pull request's, so no declaration makes it trusted."
            : `To save where the default branch restores, declare the scope (key.scope in kcache.yml, or --scope): ${DEFAULT_BRANCH_ONLY} where this runner builds only the default branch, or branch/<name> where a fact names that branch (docs/other-ci.md).`
        }`,
      };
    }
  }
}

function declarationRefusal(
  identity: RunIdentity,
  placed: ScopePlan,
  scope: string,
  defaultBranch: string,
  cwd: string,
): string | null {
  const target = scope === DEFAULT_BRANCH_ONLY ? defaultBranchScope(defaultBranch) : scope;
  // Less trust than the facts give is always allowed.
  if (!isTrustedScope(target) || target === placed.write) return null;
  const ref = identity.ref;
  const said = `${identity.system ?? "git"} says ${describe(identity)}`;
  if (ref.kind === "pr" || (ref.kind === "unplaced" && ref.prSignal))
    return `${said}; a pull request's build never writes a branch's or tag's scope`;
  if (ref.kind !== "unplaced") return `${said}, so it writes ${placed.write}; leave the scope undeclared`;
  if (scope === DEFAULT_BRANCH_ONLY) return null;
  const branch = target.startsWith("branch/") ? target.slice("branch/".length) : null;
  if (branch !== null && (ref.hints.includes(branch) || headIsTipOf(branch, cwd))) return null;
  return `no fact names ${target} (${ref.reason}); where this runner builds only the default branch, declare ${DEFAULT_BRANCH_ONLY}`;
}

function describe(identity: RunIdentity): string {
  const ref = identity.ref;
  switch (ref.kind) {
    case "branch":
      return `branch ${ref.name}`;
    case "tag":
      return `tag ${ref.name}`;
    case "pr":
      return `pull request ${ref.id}${ref.fork ? " from a fork" : ""}${ref.base ? ` into ${ref.base}` : ""}`;
    case "ref":
      return `ref ${ref.name}`;
    case "local":
      return "no CI and no git checkout";
    case "unplaced":
      return ref.reason;
  }
}

/** What `kcache key` says the build is. */
export function describeIdentity(identity: RunIdentity): string {
  const who = identity.system ?? (identity.ref.kind === "unplaced" ? "untrusted" : "no CI recognised");
  return `${who}: ${describe(identity)}`;
}

/** HEAD is the commit that branch's tip is, as the clone knows it (origin's, else a local branch). */
function headIsTipOf(branch: string, cwd: string): boolean {
  const head = fromRefs(cwd, (r) => r.headCommit(), ["rev-parse", "HEAD"]);
  if (!head) return false;
  return [`refs/remotes/origin/${branch}`, `refs/heads/${branch}`].some(
    (ref) => resolveRevision(ref, cwd) === head,
  );
}

/** The branch origin/HEAD points at ("master" in a repository made before "main"), when git knows it. */
function gitDefaultBranch(cwd: string): string | undefined {
  // No origin/HEAD file: none (a symbolic ref is never packed), as git would answer; git is not asked.
  const branch = fromRefs(
    cwd,
    (r) => r.originDefault() ?? "",
    ["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
    (out) => (out.startsWith("origin/") ? out.slice("origin/".length) : ""),
  );
  return branch || undefined;
}
