import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** $KCACHE_STATE_DIR, else $RUNNER_TEMP/kcache-state on GitHub runners, else ~/.cache/kcache-state. */
export function stateDir(env: NodeJS.ProcessEnv): string {
  if (env.KCACHE_STATE_DIR) return env.KCACHE_STATE_DIR;
  if (env.RUNNER_TEMP) return path.join(env.RUNNER_TEMP, "kcache-state");
  return path.join(env.HOME || os.homedir(), ".cache", "kcache-state");
}

/**
 * Answers kept in the state folder so that later commands start sooner (the stack probes, a
 * validated kcache.yml; docs/storage-format.md). Each is only ever time saved: one that cannot be
 * read is asked again, and one that cannot be written costs the next command that time.
 */

/** The kept JSON value in `file`, or undefined where there is none or it does not parse. */
export function readKept(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/** Keeps `value` in `file`, whole or not at all (a temp file renamed in); a failure is ignored. */
export function keepAnswer(file: string, value: unknown): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(value));
    fs.renameSync(tmp, file);
  } catch {
    // Kept only to save time.
  }
}
