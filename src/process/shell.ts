import fs from "node:fs";
import path from "node:path";
import { UsageError } from "../errors.js";
import type { Log } from "../log.js";

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

/**
 * For `kcache run`, before anything runs: a warning where the commands will get sh instead of bash,
 * and a usage error (exit 2) where PATH has neither.
 */
export function sayShell(env: NodeJS.ProcessEnv, log: Log): void {
  const shell = commandShell(env);
  if (shell === null)
    throw new UsageError(
      "neither bash nor sh is on PATH: kcache run runs each command with bash -c (or sh -c); install bash or add it to PATH",
    );
  if (shell === "sh")
    log.warn(
      "bash is not on PATH: the profile's commands run with sh -c (POSIX sh; bash-only syntax such as [[ ]] or source fails there); install bash to run them as written",
    );
}
