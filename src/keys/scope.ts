import fs from "node:fs";
import { fromRefs } from "./git-refs.js";

/**
 * Where a run may write and read. A pull request writes only its own scope; the default branch never
 * reads a pull request's scope, so a PR cannot poison what main restores.
 */
export interface ScopePlan {
  /** The scope this run saves into ("pr/123", "branch/main", "tag/v1", "untrusted/<event>-<run>"). */
  write: string;
  /** Scopes searched on restore, in order: own, then base branch, then default branch. */
  read: string[];
  defaultBranch: string;
}

/** Events whose run may execute a pull request's code, whatever GITHUB_REF says. */
const PR_EVENTS = new Set([
  "pull_request",
  "pull_request_target",
  "pull_request_review",
  "pull_request_review_comment",
]);

/**
 * Events that only ever run the repository's own code at GITHUB_REF. Any event not listed here, or
 * listed but whose payload names a pull request, is treated like a pull request.
 */
const TRUSTED_EVENTS = new Set([
  "push",
  "schedule",
  "workflow_dispatch",
  "repository_dispatch",
  "release",
  "create",
  "delete",
  "merge_group",
  "deployment",
  "deployment_status",
  "page_build",
  "registry_package",
  "issues",
  "issue_comment",
  "discussion",
  "discussion_comment",
  "label",
  "milestone",
  "project",
  "project_card",
  "project_column",
  "public",
  "gollum",
  "watch",
  "fork",
  "status",
  "branch_protection_rule",
  "check_run",
  "check_suite",
  "workflow_run",
]);

/** What the event payload says about pull requests. */
interface EventFacts {
  /** The pull request the run is about, when the payload names one. */
  pr: number | null;
  /** The run may execute code from a pull request (or a fork) even if no number is known. */
  untrusted: boolean;
  /** The pull request's base branch, when known. */
  base: string | null;
  defaultBranch: string | null;
}

/** The scope the default branch's runs write and everyone reads ("branch/main"). */
export function defaultBranchScope(defaultBranch: string): string {
  return `branch/${defaultBranch}`;
}

/**
 * Whether a scope's runs ran the repository's own code at a branch or tag (push, schedule,
 * workflow_dispatch): only those may evict entries they did not use. A pull request's, an
 * untrusted event's or another ref's scope never does.
 */
export function isTrustedScope(scope: string): boolean {
  return scope.startsWith("branch/") || scope.startsWith("tag/");
}

/** Works out the scopes from GitHub's variables and event payload, or from git outside GitHub. */
export function scopePlan(env: NodeJS.ProcessEnv, cwd: string, configuredDefault?: string): ScopePlan {
  const facts = eventFacts(env);
  const defaultBranch = configuredDefault ?? facts.defaultBranch ?? "main";
  const def = defaultBranchScope(defaultBranch);
  const uniq = (xs: string[]) => [...new Set(xs)];

  const ref = env.GITHUB_REF ?? "";
  const event = env.GITHUB_EVENT_NAME ?? "";
  if (env.GITHUB_ACTIONS === "true" || env.GITHUB_REF) {
    const refPr = /^refs\/pull\/(\d+)\//.exec(ref)?.[1];
    const pr = facts.pr ?? (refPr ? Number(refPr) : null);
    const prLike =
      pr !== null || facts.untrusted || PR_EVENTS.has(event) || (event !== "" && !TRUSTED_EVENTS.has(event));
    if (prLike) {
      const baseRef = env.GITHUB_BASE_REF || facts.base;
      const base = baseRef ? `branch/${baseRef}` : def;
      const own = pr !== null ? `pr/${pr}` : `untrusted/${event || "unknown"}-${env.GITHUB_RUN_ID || "run"}`;
      return { write: own, read: uniq([own, base, def]), defaultBranch };
    }
    if (ref.startsWith("refs/heads/")) {
      const own = `branch/${ref.slice("refs/heads/".length)}`;
      return { write: own, read: uniq([own, def]), defaultBranch };
    }
    if (ref.startsWith("refs/tags/")) {
      const own = `tag/${ref.slice("refs/tags/".length)}`;
      return { write: own, read: uniq([own, def]), defaultBranch };
    }
    // merge_group and other refs: their own scope, reading the default branch.
    const own = `ref/${ref.replace(/^refs\//, "") || "unknown"}`;
    return { write: own, read: uniq([own, def]), defaultBranch };
  }
  // Outside GitHub there is no payload naming the default branch: the clone's origin/HEAD does.
  const outsideDefault = configuredDefault ?? facts.defaultBranch ?? gitDefaultBranch(cwd) ?? "main";
  const outsideDef = defaultBranchScope(outsideDefault);
  const branch = gitBranch(cwd) ?? outsideDefault;
  const own = `branch/${branch}`;
  return { write: own, read: uniq([own, outsideDef]), defaultBranch: outsideDefault };
}

/**
 * Reads GITHUB_EVENT_PATH. A pull request number anywhere GitHub puts one makes the run a pull
 * request's: `pull_request.number` (pull_request_target too, whose GITHUB_REF is the base branch),
 * `issue.pull_request` (a comment on a pull request), `workflow_run.pull_requests` and a
 * `workflow_run` started by a pull request event or from a fork, `check_suite`/`check_run` pull requests.
 */
function eventFacts(env: NodeJS.ProcessEnv): EventFacts {
  const facts: EventFacts = { pr: null, untrusted: false, base: null, defaultBranch: null };
  if (!env.GITHUB_EVENT_PATH) return facts;
  let e: Payload;
  try {
    e = JSON.parse(fs.readFileSync(env.GITHUB_EVENT_PATH, "utf8")) as Payload;
  } catch {
    // Under GitHub Actions the payload is always there; one that cannot be read proves nothing trusted.
    facts.untrusted = env.GITHUB_ACTIONS === "true";
    return facts;
  }
  if (!e || typeof e !== "object") return facts;
  facts.defaultBranch = str(e.repository?.default_branch);
  const prs: Pr[] = [];
  if (e.pull_request) prs.push(e.pull_request);
  if (e.issue?.pull_request && num(e.issue.number) !== null) prs.push({ number: e.issue.number });
  for (const holder of [e.workflow_run, e.check_suite, e.check_run, e.check_run?.check_suite]) {
    if (Array.isArray(holder?.pull_requests)) prs.push(...holder.pull_requests);
  }
  const first = prs.find((p) => num(p?.number) !== null);
  if (first) {
    facts.pr = num(first.number);
    facts.base = str(first.base?.ref);
  } else if (num(e.number) !== null && PR_EVENTS.has(env.GITHUB_EVENT_NAME ?? "")) {
    facts.pr = num(e.number);
  }
  const run = e.workflow_run;
  if (run) {
    const fromFork =
      str(run.head_repository?.full_name) !== null &&
      str(e.repository?.full_name) !== null &&
      run.head_repository?.full_name !== e.repository?.full_name;
    // A workflow_run runs the default branch's workflow, but often on the triggering run's code or
    // artifacts: only a run triggered on the default branch itself, from this repository, is trusted.
    const otherBranch =
      str(run.head_branch) !== null &&
      facts.defaultBranch !== null &&
      run.head_branch !== facts.defaultBranch;
    if (
      PR_EVENTS.has(str(run.event) ?? "") ||
      fromFork ||
      otherBranch ||
      (run.event && !TRUSTED_EVENTS.has(run.event))
    )
      facts.untrusted = true;
  }
  return facts;
}

interface Pr {
  number?: unknown;
  base?: { ref?: unknown };
}

interface Payload {
  number?: unknown;
  repository?: { default_branch?: unknown; full_name?: unknown };
  pull_request?: Pr;
  issue?: { number?: unknown; pull_request?: unknown };
  workflow_run?: {
    event?: string;
    head_branch?: unknown;
    pull_requests?: Pr[];
    head_repository?: { full_name?: unknown };
  };
  check_suite?: { pull_requests?: Pr[] };
  check_run?: { pull_requests?: Pr[]; check_suite?: { pull_requests?: Pr[] } };
}

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : null;
}

function str(v: unknown): string | null {
  return typeof v === "string" && v !== "" ? v : null;
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

/** The branch checked out; none when HEAD is detached. */
function gitBranch(cwd: string): string | undefined {
  const branch = fromRefs(
    cwd,
    (r) => r.headBranch() ?? "",
    ["rev-parse", "--abbrev-ref", "HEAD"],
    (out) => (out === "HEAD" ? "" : out),
  );
  return branch || undefined;
}
