import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { processAlive } from "../../process-alive.js";

/**
 * Who owns a restore's staging folder, and when another restore may delete it. A PID names a process
 * only inside its own PID namespace on its own boot: containers that mount one cache folder each
 * have a PID 1, so a bare PID in a folder's name let one container's restore judge another's live
 * staging dead and delete it under it. The name now carries where the PID means something (a hash
 * of the host name, the boot id and the PID namespace) and a random token:
 *   .kcache-restore-<where>-<pid>-<random>
 * A folder of this same "where" is stale when its process is gone; any other (another container,
 * another host, a kcache before this rule) only when nobody has touched it for STALE_FOREIGN_MS: a
 * live restore touches its folder every HEARTBEAT_MS.
 */
export const HEARTBEAT_MS = 30_000;
export const STALE_FOREIGN_MS = 10 * 60_000;
const NAME = new RegExp(`^${KCACHE_PRIVATE_PREFIX.replace(".", "\\.")}restore-(?:([0-9a-f]{12})-)?(\\d+)-`);

let where: string | undefined;
/** This process's PID namespace on this boot of this host, as 12 hex digits. */
export function pidNamespace(): string {
  if (where) return where;
  const read = (f: string, link = false) => {
    try {
      return link ? fs.readlinkSync(f) : fs.readFileSync(f, "utf8").trim();
    } catch {
      return "";
    }
  };
  where = createHash("sha256")
    .update(
      [os.hostname(), read("/proc/sys/kernel/random/boot_id"), read("/proc/self/ns/pid", true)].join("\n"),
    )
    .digest("hex")
    .slice(0, 12);
  return where;
}

/** A fresh staging folder inside a cache root, named for this process (see above). */
export function makeStaging(root: string): string {
  fs.mkdirSync(root, { recursive: true });
  const dir = path.join(
    root,
    `${KCACHE_PRIVATE_PREFIX}restore-${pidNamespace()}-${process.pid}-${randomBytes(6).toString("hex")}`,
  );
  fs.mkdirSync(dir);
  return dir;
}

/** Whether the staging folder `name` in `root` belongs to no live restore and may be deleted. */
export function stagingIsStale(root: string, name: string, now = Date.now()): boolean {
  const m = NAME.exec(name);
  if (!m) return false;
  const [, ns, pid] = m;
  if (ns === pidNamespace()) return Number(pid) === process.pid || !processAlive(Number(pid));
  try {
    return now - fs.statSync(path.join(root, name)).mtimeMs > STALE_FOREIGN_MS;
  } catch {
    return false;
  }
}

/** Touches the staging folders every HEARTBEAT_MS while a restore runs; the returned function stops it. */
export function heartbeat(dirs: string[]): () => void {
  const timer = setInterval(() => {
    const t = new Date();
    for (const d of dirs) fs.utimes(d, t, t, () => {});
  }, HEARTBEAT_MS);
  timer.unref();
  return () => clearInterval(timer);
}
