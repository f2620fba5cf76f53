import { createHash, randomBytes } from "node:crypto";
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

/** The most a kept answer may be: a validated kcache.yml with many profiles is tens of kB. */
const MAX_KEPT_BYTES = 4 * 1024 * 1024;

/**
 * The kept JSON value in `file`, or undefined where there is none, or it is anything but a regular
 * file kcache wrote whole: a FIFO or a link (to /dev/zero, say) is never opened for a blocking read, a
 * file over 4 MiB is never read, and one whose digest does not match its value (hand-edited, garbled,
 * written by an older kcache) is asked again rather than trusted.
 */
export function readKept(file: string): unknown {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > MAX_KEPT_BYTES) return undefined;
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < st.size) {
      const n = fs.readSync(fd, buf, got, st.size - got, got);
      if (n === 0) break;
      got += n;
    }
    const kept = JSON.parse(buf.subarray(0, got).toString("utf8")) as { sha256?: unknown; value?: unknown };
    if (!kept || typeof kept !== "object" || typeof kept.sha256 !== "string") return undefined;
    return digestOf(kept.value) === kept.sha256 ? kept.value : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

function digestOf(value: unknown): string {
  return createHash("sha256")
    .update(JSON.stringify(value) ?? "")
    .digest("hex");
}

/** Keeps `value` in `file` with its digest, whole or not at all (a temp file renamed in); a failure is ignored. */
export function keepAnswer(file: string, value: unknown): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ sha256: digestOf(value), value }));
    fs.renameSync(tmp, file);
  } catch {
    // Kept only to save time.
  }
}
