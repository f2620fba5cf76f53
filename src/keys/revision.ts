import { execFileSync } from "node:child_process";

/** The checkout revision: $GITHUB_SHA, else `git rev-parse HEAD`, else null (not a git checkout). */
export function currentRevision(env: NodeJS.ProcessEnv, cwd: string): string | null {
  if (env.GITHUB_SHA) return env.GITHUB_SHA;
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd, stdio: ["ignore", "pipe", "ignore"] })
      .toString()
      .trim();
  } catch {
    return null;
  }
}
