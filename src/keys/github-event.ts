import { boundedText } from "../bounded-file.js";

/** Events whose run may execute a pull request's code, whatever GITHUB_REF says. */
export const PR_EVENTS = new Set([
  "pull_request",
  "pull_request_target",
  "pull_request_review",
  "pull_request_review_comment",
]);

/**
 * Events that only ever run the repository's own code at GITHUB_REF. Any event not listed here, or
 * listed but whose payload names a pull request, is treated like a pull request.
 */
export const TRUSTED_EVENTS = new Set([
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
export interface EventFacts {
  /** The pull request the run is about, when the payload names one. */
  pr: number | null;
  /** The run may execute code from a pull request (or a fork) even if no number is known. */
  untrusted: boolean;
  /** The pull request's base branch, when known. */
  base: string | null;
  /** The pull request's head is another repository's (a fork). */
  fork: boolean;
  defaultBranch: string | null;
}

/** GitHub's webhook payloads are at most 25 MB. */
const MAX_EVENT_BYTES = 64 * 1024 * 1024;

/**
 * Reads GITHUB_EVENT_PATH. A pull request number anywhere GitHub puts one makes the run a pull
 * request's: `pull_request.number` (pull_request_target too, whose GITHUB_REF is the base branch),
 * `issue.pull_request` (a comment on a pull request), `workflow_run.pull_requests` and a
 * `workflow_run` started by a pull request event or from a fork, `check_suite`/`check_run` pull requests.
 */
export function eventFacts(env: NodeJS.ProcessEnv): EventFacts {
  const facts: EventFacts = { pr: null, untrusted: false, base: null, fork: false, defaultBranch: null };
  if (!env.GITHUB_EVENT_PATH) return facts;
  let e: Payload;
  try {
    // Read without blocking and bounded: a FIFO or /dev/zero put there must not stall the job.
    const text = boundedText(env.GITHUB_EVENT_PATH, MAX_EVENT_BYTES);
    if (text === null) throw new Error("not a regular file of its size");
    e = JSON.parse(text) as Payload;
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
    const head = str(first.head?.repo?.full_name);
    facts.fork = head !== null && head !== str(e.repository?.full_name);
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
  head?: { repo?: { full_name?: unknown } };
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
