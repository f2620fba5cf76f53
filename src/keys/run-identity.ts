import { type BuildRef, fullCommit, pick, type RunIdentity, unplacedRef } from "./ci-facts.js";
import { otherCiIdentity, otherCiSystems } from "./ci-other.js";
import { buildkiteIdentity, gitlabIdentity, jenkinsIdentity } from "./ci-systems.js";
import { fromRefs } from "./git-refs.js";
import { eventFacts, PR_EVENTS, TRUSTED_EVENTS } from "./github-event.js";

/**
 * Variables that say "a CI runs this" without naming one: ci-info's generic rule (CI, and the build
 * ids many CIs set), plus the markers of the systems read below. A run with none of them is a
 * person's: its checked-out branch is its scope.
 */
const CI_MARKERS = [
  "CI",
  "CONTINUOUS_INTEGRATION",
  "BUILD_ID",
  "BUILD_NUMBER",
  "RUN_ID",
  "CI_APP_ID",
  "CI_BUILD_ID",
  "CI_BUILD_NUMBER",
  "CI_NAME",
];

/** The systems whose every fact kcache reads itself (keys/ci-systems.ts says why not env-ci's). */
const SYSTEMS = [
  {
    name: "GitHub Actions",
    marker: (env: NodeJS.ProcessEnv) => env.GITHUB_ACTIONS === "true",
    read: githubIdentity,
  },
  { name: "GitLab CI", marker: (env: NodeJS.ProcessEnv) => !!env.GITLAB_CI, read: gitlabIdentity },
  { name: "Buildkite", marker: (env: NodeJS.ProcessEnv) => !!env.BUILDKITE, read: buildkiteIdentity },
  {
    name: "Jenkins",
    marker: (env: NodeJS.ProcessEnv) => !!(env.JENKINS_URL || env.JENKINS_HOME),
    read: jenkinsIdentity,
  },
];

/** Reads what this build is from the environment and, where no CI says, from git. */
export async function runIdentity(env: NodeJS.ProcessEnv, cwd: string): Promise<RunIdentity> {
  const found = SYSTEMS.filter((s) => s.marker(env));
  const others = otherCiSystems(env);
  if (found.length + others.length > 1) return manySystems(found, others, env, cwd);
  const one = found[0];
  if (one)
    return one.read === githubIdentity ? githubIdentity(env) : againstCheckout(one.read(env), env, cwd);
  // GITHUB_REF alone (no GITHUB_ACTIONS): a GitHub-like environment a person or a test set up.
  if (env.GITHUB_REF && others.length === 0) return githubIdentity(env);
  const markers = CI_MARKERS.filter((m) => env[m] && env[m] !== "false");
  if (markers.length > 0 || others.length > 0) return otherCiIdentity(env, cwd, markers);
  return localIdentity(cwd);
}

/**
 * Variables of two systems at once (a GitHub push beside a GitLab merge request's): a job's own
 * definition can set any variable, another CI's included, so neither system's word is taken. The
 * build is unplaced; it is a pull request's (no declaration makes it trusted) when any of the
 * systems says so.
 */
async function manySystems(
  found: typeof SYSTEMS,
  others: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<RunIdentity> {
  const identities = found.map((s) => s.read(env));
  // env-ci's answer for the other system, once the variables of the systems above are out of its way.
  if (others.length) identities.push(await otherCiIdentity(withoutOwnMarkers(env), cwd, []));
  const prSignal = identities.some(
    (i) => i.ref.kind === "pr" || (i.ref.kind === "unplaced" && i.ref.prSignal),
  );
  const names = [...found.map((s) => s.name), ...others];
  const facts = Object.assign({}, ...identities.map((i) => i.facts)) as Record<string, string>;
  return unplacedIn(
    null,
    env,
    `variables of ${names.slice(0, -1).join(", ")} and ${names.at(-1)} are set at once; kcache cannot tell which system runs this build (a job's definition can set another system's variables)`,
    prSignal,
    facts,
  );
}

/** The environment without the markers env-ci knows GitHub Actions, GitLab, Buildkite and Jenkins by. */
function withoutOwnMarkers(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { GITHUB_ACTIONS, GITLAB_CI, BUILDKITE, JENKINS_URL, ...rest } = env;
  return rest;
}

/** GitHub Actions: the event payload decides, not only GITHUB_REF (DESIGN.md: pull_request_target). */
function githubIdentity(env: NodeJS.ProcessEnv): RunIdentity {
  const facts = eventFacts(env);
  const ref = env.GITHUB_REF ?? "";
  const event = env.GITHUB_EVENT_NAME ?? "";
  const shown = pick(env, ["GITHUB_EVENT_NAME", "GITHUB_REF", "GITHUB_BASE_REF", "GITHUB_RUN_ID"]);
  const identity = (r: BuildRef): RunIdentity => ({
    system: "GitHub Actions",
    facts: {
      ...shown,
      ...(facts.pr !== null ? { "event payload: pull request": String(facts.pr) } : {}),
      ...(facts.untrusted ? { "event payload: may run a pull request's code": "yes" } : {}),
    },
    ref: r,
    defaultBranch: facts.defaultBranch,
    event: event || null,
    commit: fullCommit(env.GITHUB_SHA),
  });
  const refPr = /^refs\/pull\/(\d+)\//.exec(ref)?.[1];
  const pr = facts.pr ?? (refPr ? Number(refPr) : null);
  const prLike =
    pr !== null || facts.untrusted || PR_EVENTS.has(event) || (event !== "" && !TRUSTED_EVENTS.has(event));
  if (prLike) {
    const base = env.GITHUB_BASE_REF || facts.base;
    if (pr !== null) return identity({ kind: "pr", id: String(pr), base, fork: facts.fork });
    return identity({
      kind: "unplaced",
      reason: `event ${event || "(none)"} may run a pull request's code`,
      prSignal: true,
      hints: [],
      name: `${event || "unknown"}-${env.GITHUB_RUN_ID || "run"}`,
    });
  }
  if (ref.startsWith("refs/heads/"))
    return identity({ kind: "branch", name: ref.slice("refs/heads/".length) });
  if (ref.startsWith("refs/tags/")) return identity({ kind: "tag", name: ref.slice("refs/tags/".length) });
  // merge_group and other refs: their own scope, reading the default branch.
  return identity({ kind: "ref", name: ref.replace(/^refs\//, "") || "unknown" });
}

/**
 * A CI that names a branch while the checkout is on another branch contradicts itself (a script
 * checked out something else): kcache cannot tell which code the job compiles.
 */
function againstCheckout(identity: RunIdentity, env: NodeJS.ProcessEnv, cwd: string): RunIdentity {
  if (identity.ref.kind !== "branch") return identity;
  const checkedOut = gitBranch(cwd);
  if (checkedOut === undefined || checkedOut === identity.ref.name) return identity;
  return {
    ...identity,
    ref: unplacedRef(
      identity.system,
      env,
      `${identity.system} says branch ${identity.ref.name}, but the checkout is on branch ${checkedOut}`,
      false,
    ),
  };
}

/** No CI: the branch checked out, else (not a checkout) a person's own run of the default branch. */
function localIdentity(cwd: string): RunIdentity {
  const inCheckout = fromRefs(cwd, (r) => r.headCommit() ?? "", ["rev-parse", "HEAD"]);
  const branch = gitBranch(cwd);
  const base = { system: null, facts: {}, defaultBranch: null, event: null, commit: inCheckout || null };
  if (branch) return { ...base, facts: { "git branch": branch }, ref: { kind: "branch", name: branch } };
  if (inCheckout === null) return { ...base, ref: { kind: "local" } };
  return {
    ...base,
    facts: { "git HEAD": "detached" },
    ref: {
      kind: "unplaced",
      reason: "HEAD is detached and no CI variables say what this build is",
      prSignal: false,
      hints: [],
      name: `detached-${(inCheckout || "run").slice(0, 12)}`,
    },
  };
}

/** An identity that cannot be placed, for a CI whose facts contradict each other. */
export function unplacedIn(
  system: string | null,
  env: NodeJS.ProcessEnv,
  reason: string,
  prSignal: boolean,
  facts: Record<string, string> = {},
): RunIdentity {
  return {
    system,
    facts,
    ref: unplacedRef(system, env, reason, prSignal),
    defaultBranch: null,
    event: null,
    commit: null,
  };
}

/** The branch checked out; undefined when HEAD is detached or this is no checkout. */
export function gitBranch(cwd: string): string | undefined {
  const branch = fromRefs(
    cwd,
    (r) => r.headBranch() ?? "",
    ["rev-parse", "--abbrev-ref", "HEAD"],
    (out) => (out === "HEAD" ? "" : out),
  );
  return branch || undefined;
}
