import { execFileSync } from "node:child_process";
import fs from "node:fs";

/**
 * Where a run may write and read. A pull request writes only its own scope; the default branch never
 * reads a pull request's scope, so a PR cannot poison what main restores.
 */
export interface ScopePlan {
  /** The scope this run saves into ("pr/123", "branch/main", "tag/v1"). */
  write: string;
  /** Scopes searched on restore, in order: own, then base branch, then default branch. */
  read: string[];
  defaultBranch: string;
}

const PR_EVENTS = new Set([
  "pull_request",
  "pull_request_target",
  "pull_request_review",
  "pull_request_review_comment",
]);

/** Works out the scopes from GitHub's variables, or from git outside GitHub. */
export function scopePlan(env: NodeJS.ProcessEnv, cwd: string, configuredDefault?: string): ScopePlan {
  const defaultBranch = configuredDefault ?? defaultBranchFromEvent(env) ?? "main";
  const def = `branch/${defaultBranch}`;
  const uniq = (xs: string[]) => [...new Set(xs)];

  const ref = env.GITHUB_REF ?? "";
  const prNumber = /^refs\/pull\/(\d+)\//.exec(ref)?.[1];
  if (env.GITHUB_ACTIONS === "true" || env.GITHUB_REF) {
    if (prNumber && (PR_EVENTS.has(env.GITHUB_EVENT_NAME ?? "") || !env.GITHUB_EVENT_NAME)) {
      const base = env.GITHUB_BASE_REF ? `branch/${env.GITHUB_BASE_REF}` : def;
      return { write: `pr/${prNumber}`, read: uniq([`pr/${prNumber}`, base, def]), defaultBranch };
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
  const branch = gitBranch(cwd) ?? defaultBranch;
  const own = `branch/${branch}`;
  return { write: own, read: uniq([own, def]), defaultBranch };
}

function defaultBranchFromEvent(env: NodeJS.ProcessEnv): string | undefined {
  if (!env.GITHUB_EVENT_PATH) return undefined;
  try {
    const event = JSON.parse(fs.readFileSync(env.GITHUB_EVENT_PATH, "utf8")) as {
      repository?: { default_branch?: string };
    };
    return event.repository?.default_branch || undefined;
  } catch {
    return undefined;
  }
}

function gitBranch(cwd: string): string | undefined {
  try {
    const b = execFileSync("git", ["rev-parse", "--abbrev-ref", "HEAD"], {
      cwd,
      stdio: ["ignore", "pipe", "ignore"],
    })
      .toString()
      .trim();
    return b && b !== "HEAD" ? b : undefined;
  } catch {
    return undefined;
  }
}
