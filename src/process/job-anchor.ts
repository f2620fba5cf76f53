import fs from "node:fs";

/**
 * The process that lives as long as the CI job does, whose end means the job ended: what a
 * persistent cache folder's job folders and live-job markers are named for (cache/persistent/), so
 * the next restore can tell a job that is still running from one that was killed.
 *
 * - `kcache run`: kcache itself (restore, commands and save are one process).
 * - Under GitHub Actions: the runner's `Runner.Worker`, which starts for each job and runs every
 *   step of it (the restore step, the job's steps, the post step), found up the process tree.
 * - Otherwise (GitLab's shell, a script): the shell that started kcache, which runs the job's script.
 */
export function jobAnchorPid(env: NodeJS.ProcessEnv, runsTheJob: boolean): number {
  if (runsTheJob) return process.pid;
  if (env.GITHUB_ACTIONS === "true") {
    const worker = ancestorNamed("Runner.Worker");
    if (worker !== null) return worker;
  }
  return process.ppid;
}

/** The nearest ancestor whose command name is `name`, from /proc; null where there is none or no /proc. */
function ancestorNamed(name: string): number | null {
  let pid = process.ppid;
  for (let depth = 0; pid > 1 && depth < 64; depth++) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return null;
    }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split at the last ")".
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    if (comm === name || comm === name.slice(0, 15)) return pid;
    const ppid = Number(stat.slice(close + 2).split(" ")[1]);
    if (!Number.isInteger(ppid)) return null;
    pid = ppid;
  }
  return null;
}
