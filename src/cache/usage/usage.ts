import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { type CacheFolder, entryFilePath, type FoundEntry, KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { entryId } from "../../manifest/entry-id.js";
import { isStamped, STAMP_MS } from "../../pack/read/unread-stamp.js";

/**
 * Which entries a job used, learnt from the file system's access times: a restore stamps each
 * entry's files as unread (pack/read/unread-stamp.ts: the atime one second before the mtime), and at
 * save time a file whose atime is no longer the stamp was read. Under `noatime` (or a file system
 * without access times) a read changes nothing: the restore's probe finds that out and the save then
 * counts every entry as used.
 */

/**
 * Whether reads in `root` move access times: a probe file is stamped, read and looked at again.
 * False when they do not (`noatime`) or the probe cannot be written.
 */
export function atimeRecordsReads(root: string): boolean {
  const probe = path.join(root, `${KCACHE_PRIVATE_PREFIX}atime-probe-${randomBytes(4).toString("hex")}`);
  try {
    fs.writeFileSync(probe, "atime probe\n");
    const st = fs.statSync(probe);
    fs.utimesSync(probe, (st.mtimeMs - STAMP_MS) / 1000, st.mtimeMs / 1000);
    const stamped = fs.statSync(probe);
    if (!isStamped(stamped.atimeMs, stamped.mtimeMs)) return false;
    fs.readFileSync(probe);
    const read = fs.statSync(probe);
    return !isStamped(read.atimeMs, read.mtimeMs);
  } catch {
    return false;
  } finally {
    fs.rmSync(probe, { force: true });
  }
}

/**
 * Stamps every file of `entry` as unread and returns the entry with its files' stats as they are now
 * (setting times rewrites the mtime at the file system's precision). A file that vanished is left out.
 */
export function stampUnread(root: string, entry: FoundEntry): FoundEntry {
  const files = [];
  for (const f of entry.files) {
    const p = entryFilePath(root, entry, f.rel);
    try {
      fs.utimesSync(p, (f.mtimeMs - STAMP_MS) / 1000, f.mtimeMs / 1000);
      const st = fs.statSync(p);
      files.push({ ...f, mtimeMs: st.mtimeMs, atimeMs: st.atimeMs, ino: st.ino });
    } catch {
      // Gone or unwritable: the entry's signature no longer matches and the save looks at it afresh.
    }
  }
  return { name: entry.name, files };
}

/** Whether any of the entry's files was read since a restore stamped it (or was never stamped). */
export function readSinceStamp(entry: FoundEntry): boolean {
  return entry.files.some((f) => !isStamped(f.atimeMs, f.mtimeMs));
}

/**
 * Entries (by "cache/name") whose folders the Triton hook saw a cache lookup hit in: `dirs` are the
 * absolute entry folders Triton's cache manager returned files from, mapped to the configured cache
 * whose folder holds them (symbolic links resolved on both sides).
 */
export function hookUsedEntries(caches: CacheFolder[], dirs: string[]): Set<string> {
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const roots = new Map(caches.map((c) => [real(c.path), c.name]));
  const out = new Set<string>();
  for (const d of dirs) {
    const dir = real(d);
    const cache = roots.get(path.dirname(dir));
    if (cache) out.add(entryId({ cache, name: path.basename(dir) }));
  }
  return out;
}
