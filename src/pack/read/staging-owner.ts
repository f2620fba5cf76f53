import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { makeFolders } from "../../make-folders.js";
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
const STAGING: OwnerRule = {
  prefix: `${KCACHE_PRIVATE_PREFIX}restore-`,
  foreignMs: STALE_FOREIGN_MS,
  ownPidIsStale: true,
};

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

/**
 * A name for something process `pid` of this namespace owns: `<prefix><where>-<pid>-<random>`. The
 * staging folders of restores use it, and so do a persistent folder's job folders, live-job markers
 * and lock (cache/persistent/).
 */
export function ownedName(prefix: string, pid = process.pid): string {
  return `${prefix}${pidNamespace()}-${pid}-${randomBytes(6).toString("hex")}`;
}

/** The owner a name made by ownedName with `prefix` records (`where` null: a name from before namespaces), or null. */
export function ownerOf(prefix: string, name: string): { where: string | null; pid: number } | null {
  if (!name.startsWith(prefix)) return null;
  const m = /^(?:([0-9a-f]{12})-)?(\d+)-/.exec(name.slice(prefix.length));
  return m ? { where: m[1] ?? null, pid: Number(m[2]) } : null;
}

/** How to judge whether what a name records has an owner still. */
export interface OwnerRule {
  prefix: string;
  /** Untouched this long, a thing of another namespace (or of no recorded one) has no owner. */
  foreignMs: number;
  /** A thing named for this very process is a leftover of an earlier one with its PID (restore staging). */
  ownPidIsStale?: boolean;
}

/**
 * Whether the thing `name` in `root` (made by ownedName with the rule's prefix) has no live owner: in
 * this namespace, its process is gone; elsewhere (another container or host, or no namespace
 * recorded), nobody has touched it for `foreignMs`. False for names of other shapes.
 */
export function ownerGone(root: string, name: string, rule: OwnerRule, now = Date.now()): boolean {
  const owner = ownerOf(rule.prefix, name);
  if (!owner) return false;
  let mtimeMs: number;
  try {
    mtimeMs = fs.statSync(path.join(root, name)).mtimeMs;
  } catch {
    return false;
  }
  return ownerStale(owner, mtimeMs, rule, now);
}

/** Whether `owner` no longer runs: its process gone (this namespace), or `mtimeMs` older than the rule allows (elsewhere). */
export function ownerStale(
  owner: { where: string | null; pid: number },
  mtimeMs: number,
  rule: OwnerRule,
  now = Date.now(),
): boolean {
  if (owner.where === pidNamespace())
    return (rule.ownPidIsStale === true && owner.pid === process.pid) || !processAlive(owner.pid);
  return now - mtimeMs > rule.foreignMs;
}

/** A fresh staging folder inside a cache root, named for this process (see above). */
export function makeStaging(root: string): string {
  makeFolders(root);
  const dir = path.join(root, ownedName(STAGING.prefix));
  fs.mkdirSync(dir);
  return dir;
}

/** Whether the staging folder `name` in `root` belongs to no live restore and may be deleted. */
export function stagingIsStale(root: string, name: string, now = Date.now()): boolean {
  return ownerGone(root, name, STAGING, now);
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
