/**
 * What a build is, as the CI that runs it says: the one answer the scope, the key, the run records
 * and prewarm all take (keys/scope.ts turns it into the scopes a build may write and read).
 */
export type BuildRef =
  /** A branch's own code: a push, a schedule or a manual run on it. */
  | { kind: "branch"; name: string }
  | { kind: "tag"; name: string }
  /** A pull or merge request's code, from this repository or a fork. */
  | { kind: "pr"; id: string; base: string | null; fork: boolean }
  /** Another ref (GitHub's merge queue): a scope of its own that nothing else reads. */
  | { kind: "ref"; name: string }
  /** No CI and no git checkout: a person's own machine, taken as the default branch. */
  | { kind: "local" }
  /**
   * A build kcache cannot place: an unknown CI, a detached HEAD with no CI facts, facts that
   * contradict each other. `prSignal`: some fact says it may be a pull request's (no declaration
   * can make it trusted then). `hints`: branches weaker facts name (a CI's branch variable that
   * kcache does not trust on its own), which a declared `key.scope` may agree with.
   */
  | { kind: "unplaced"; reason: string; prSignal: boolean; hints: string[]; name: string };

export interface RunIdentity {
  /** The CI recognised ("GitLab CI"), or null where none is. */
  system: string | null;
  /** The variables the answer was read from, as they were set (only those set). */
  facts: Record<string, string>;
  ref: BuildRef;
  /** The default branch as the CI says it, when it does. */
  defaultBranch: string | null;
  /** What started the build (push, schedule, merge_request_event...), when the CI says. */
  event: string | null;
  /** The commit the CI built, when it says (a full hexadecimal id only). */
  commit: string | null;
}

/** A build `system` cannot place, for `reason`; named for the CI and its run number (its untrusted scope). */
export function unplacedRef(
  system: string | null,
  env: NodeJS.ProcessEnv,
  reason: string,
  prSignal: boolean,
  hints: string[] = [],
): BuildRef {
  return { kind: "unplaced", reason, prSignal, hints, name: `${slug(system)}-${runNumber(env)}` };
}

/** The variables of `names` that are set, for `kcache key` to show. */
export function pick(env: NodeJS.ProcessEnv, names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = env[n];
    if (v !== undefined && v !== "") out[n] = v;
  }
  return out;
}

/** A commit id only when it is one (Buildkite's BUILDKITE_COMMIT may be "HEAD"). */
export function fullCommit(v: string | undefined): string | null {
  return v && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(v) ? v : null;
}

/** A CI's name as a scope part ("gitlab-ci"). */
export function slug(system: string | null): string {
  return (
    (system ?? "unknown")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "") || "unknown"
  );
}

/** This build's number, where a CI gives one, for an untrusted scope of its own. */
export function runNumber(env: NodeJS.ProcessEnv): string {
  const id =
    env.CI_PIPELINE_ID ||
    env.BUILDKITE_BUILD_ID ||
    env.BUILD_TAG ||
    env.BUILD_ID ||
    env.BUILD_NUMBER ||
    env.RUN_ID ||
    env.CI_BUILD_ID ||
    "run";
  return id.replace(/[^A-Za-z0-9._-]+/g, "-").slice(0, 64);
}
