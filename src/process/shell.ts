import fs from "node:fs";
import path from "node:path";

/**
 * The shell a job's commands run in: bash where PATH has it (commands are written for it, and
 * `source:` is bash's), else POSIX sh (a slim container with only busybox or dash), else none.
 */
export function commandShell(env: NodeJS.ProcessEnv): "bash" | "sh" | null {
  const dirs = (env.PATH ?? "").split(path.delimiter).filter(Boolean);
  const has = (name: string) =>
    dirs.some((d) => {
      try {
        fs.accessSync(path.join(d, name), fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  return has("bash") ? "bash" : has("sh") ? "sh" : null;
}
