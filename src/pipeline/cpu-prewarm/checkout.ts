import { execFileSync } from "node:child_process";
import path from "node:path";

/**
 * The checkout a job runs in: git's top level above `cwd`, else `cwd` itself. A compile plan names
 * each kernel's source relative to it, so a prewarm on another machine finds it in its own clone.
 */
export function checkoutRoot(cwd: string): string {
  try {
    const top = execFileSync("git", ["rev-parse", "--show-toplevel"], {
      cwd,
      encoding: "utf8",
      timeout: 10_000,
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    return top ? path.resolve(top) : path.resolve(cwd);
  } catch {
    return path.resolve(cwd);
  }
}
