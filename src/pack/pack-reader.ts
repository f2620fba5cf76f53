import { randomBytes } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import path from "node:path";
import { type Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Parser, type ReadEntry } from "tar";
import { type CacheKind, KCACHE_PRIVATE_PREFIX } from "../kinds/kind.js";
import { entryId } from "../manifest/entry-id.js";
import { createFileFully, writeFullySync } from "./checked-write.js";
import { DigestStream } from "./digest-stream.js";
import { EntryDigest } from "./entry-digest.js";
import { ensureRealDirs } from "./real-dirs.js";
import { decompressStream } from "./zstd.js";

/** An entry the manifest promises in this pack. */
export interface WantedEntry {
  cache: string;
  name: string;
  sha256: string;
  size: number;
  files: number;
}

/** Where one cache's entries are restored. */
export interface RestoreTarget {
  kind: CacheKind;
  root: string;
  /** A private folder inside `root` (same filesystem) where entries are assembled before rename. */
  staging: string;
}

/** What the manifest says of the pack as a whole: reading stops as soon as the pack exceeds it. */
export interface PackPromise {
  sha256: string;
  /** Compressed bytes. */
  size: number;
  /** Uncompressed bytes of every entry in the pack, live or not. */
  entryBytes: number;
  entries: number;
}

export interface PackReadResult {
  restored: WantedEntry[];
  /** Entries that failed verification or were missing from the pack, with the reason. */
  bad: { entry: string; reason: string }[];
  /** Tar members refused as unsafe (links, devices, paths leaving the cache, unknown caches). */
  refused: string[];
  /** Set when the pack itself could not be read to its end. */
  packError: string | null;
  /** Compressed bytes read. */
  bytes: number;
}

const REGULAR = new Set(["File", "OldFile", "ContiguousFile"]);
/** Files above this are streamed to the staging folder as they arrive instead of held in memory. */
const STREAM_ABOVE = 32 * 1024 * 1024;
/** Verified bytes waiting to be written before the reader stops taking input. */
const MAX_PENDING_BYTES = 64 * 1024 * 1024;
/** Entries being written at once per pack; each holds one file open at a time, so this bounds open files. */
const MAX_WRITING_ENTRIES = 32;
/** Tar overhead allowed per entry on top of its bytes (headers, padding, PAX names of ~10 files). */
const TAR_OVERHEAD_PER_ENTRY = 64 * 1024;

/** The most uncompressed tar bytes a pack may expand to, by what its manifest promises. */
export function tarBytesLimit(pack: PackPromise): number {
  return pack.entryBytes + pack.entries * TAR_OVERHEAD_PER_ENTRY + 1024 * 1024;
}

interface StagedFile {
  rel: string;
  chunks: Buffer[];
  /** Open descriptor of a large file being streamed to the staging folder. */
  fd: number | null;
  /** Written as it arrived (a large file), so not held in `chunks`. */
  streamed: boolean;
}

interface Current {
  id: string;
  entryName: string;
  wanted: WantedEntry;
  target: RestoreTarget;
  digest: EntryDigest;
  staged: string;
  files: StagedFile[];
  bytes: number;
  bad: string | null;
}

/**
 * Reads one compressed pack and restores the wanted entries from it. Every member is checked before a
 * byte is written: only regular files whose path is `<cache>/<entry>[/<file>]` for a wanted entry are
 * accepted, and only while the entry's bytes and files stay within what the manifest lists for it; the
 * pack itself may not run past its listed size, nor expand past its entries' bytes plus tar overhead.
 * An entry is verified against the manifest's digest in memory, written to a staging folder (up to
 * MAX_WRITING_ENTRIES at once, on libuv's threads) and only then renamed into place, so a bad or
 * partial entry is never visible in the cache.
 */
export async function readPack(
  source: Readable,
  pack: PackPromise,
  wanted: WantedEntry[],
  targets: Map<string, RestoreTarget>,
  onBytes?: (n: number) => void,
): Promise<PackReadResult> {
  const result: PackReadResult = { restored: [], bad: [], refused: [], packError: null, bytes: 0 };
  const byId = new Map(wanted.map((w) => [entryId(w), w]));
  const seen = new Set<string>();
  let current: Current | null = null;
  const writes = new Set<Promise<void>>();
  /** Verified entries waiting for a writer; started at most MAX_WRITING_ENTRIES at a time. */
  const queued: Current[] = [];
  let pendingBytes = 0;
  let drained: (() => void) | null = null;
  const full = () => pendingBytes > MAX_PENDING_BYTES || queued.length > 0;

  const discard = (c: Current, reason: string) => {
    for (const f of c.files) if (f.fd !== null) fs.closeSync(f.fd);
    fs.rmSync(c.staged, { recursive: true, force: true });
    result.bad.push({ entry: `${c.wanted.cache}/${c.wanted.name}`, reason });
  };

  const finish = (c: Current) => {
    const w = c.wanted;
    let reason = c.bad;
    if (!reason) {
      const got = c.digest.digest();
      if (got !== w.sha256)
        reason = `digest mismatch (pack has ${got.slice(0, 12)}, manifest ${w.sha256.slice(0, 12)})`;
      else if (c.digest.size !== w.size || c.digest.files !== w.files)
        reason = "size or file count differs from manifest";
    }
    if (reason) {
      discard(c, reason);
      return;
    }
    pendingBytes += c.bytes;
    queued.push(c);
    pump();
  };

  const pump = () => {
    while (queued.length && writes.size < MAX_WRITING_ENTRIES) {
      const c = queued.shift() as Current;
      const w = c.wanted;
      const job = writeEntry(c)
        .then(
          () => {
            place(c.staged, c.target.root, w.name, c.target.staging);
            result.restored.push(w);
          },
          (e: Error) => discard(c, `could not be written: ${e.message}`),
        )
        .catch((e: Error) => discard(c, `could not be placed: ${e.message}`))
        .finally(() => {
          writes.delete(job);
          pendingBytes -= c.bytes;
          pump();
          if (drained && !full() && pendingBytes <= MAX_PENDING_BYTES / 2) {
            const d = drained;
            drained = null;
            d();
          }
        });
      writes.add(job);
    }
  };

  const onEntry = (member: ReadEntry) => {
    const located = locate(member, targets);
    if (typeof located === "string") {
      result.refused.push(`${member.path}: ${located}`);
      if (current && member.path.startsWith(`${current.wanted.cache}/${current.wanted.name}/`)) {
        current.bad = `unsafe member ${member.path}`;
      }
      member.resume();
      return;
    }
    const { cache, entryName, rel, target } = located;
    const id = entryId({ cache, name: entryName });
    if (!current || current.id !== id) {
      if (current) finish(current);
      current = null;
      const w = byId.get(id);
      if (w) {
        const duplicate = seen.has(id);
        seen.add(id);
        current = {
          id,
          entryName,
          wanted: w,
          target,
          digest: new EntryDigest(),
          staged: path.join(target.staging, "e", entryName),
          files: [],
          bytes: 0,
          bad: duplicate ? "entry appears twice in the pack" : null,
        };
      }
    }
    if (!current || current.bad) {
      member.resume();
      return;
    }
    const c = current;
    // Bounded by the manifest before a byte is buffered or written: a pack that claims more bytes or
    // files for an entry than the manifest promises is refused, however it compresses.
    if (c.digest.size + member.size > c.wanted.size || c.digest.files + 1 > c.wanted.files) {
      c.bad = `pack holds more than the manifest promises for this entry (${c.wanted.size} bytes in ${c.wanted.files} files)`;
      member.resume();
      return;
    }
    c.digest.beginFile(rel, member.size);
    const file: StagedFile = { rel, chunks: [], fd: null, streamed: false };
    c.files.push(file);
    if (member.size > STREAM_ABOVE && !c.target.kind.isRelocatable(rel)) {
      const dest = rel ? path.join(c.staged, rel) : c.staged;
      fs.mkdirSync(path.dirname(dest), { recursive: true });
      const fd = fs.openSync(dest, "wx");
      file.fd = fd;
      file.streamed = true;
      member.on("data", (d: Buffer) => {
        c.digest.update(d);
        if (c.bad) return;
        try {
          writeFullySync(fd, d, dest);
        } catch (e) {
          c.bad = `could not be written: ${(e as Error).message}`;
        }
      });
      member.on("end", () => {
        fs.closeSync(fd);
        file.fd = null;
      });
      return;
    }
    c.bytes += member.size;
    member.on("data", (d: Buffer) => {
      c.digest.update(d);
      file.chunks.push(d);
    });
  };

  const tarLimit = tarBytesLimit(pack);
  let tarBytes = 0;
  const parser = new Parser({ strict: true, onReadEntry: onEntry });
  const sink = new Writable({
    highWaterMark: 1 << 20,
    write(chunk: Buffer, _enc, cb) {
      try {
        parser.write(chunk);
      } catch (e) {
        cb(e as Error);
        return;
      }
      tarBytes += chunk.length;
      if (tarBytes > tarLimit) {
        cb(new Error(`pack expands past the ${tarLimit} bytes its manifest allows (a decompression bomb?)`));
        return;
      }
      if (!full()) cb();
      else drained = () => cb();
    },
    final(cb) {
      const ended = once(parser, "end");
      parser.end();
      ended.then(() => cb(), cb);
    },
  });
  parser.on("error", (e: Error) => sink.destroy(e));
  const digest = new DigestStream(onBytes, pack.size);
  try {
    await pipeline(source, digest, await decompressStream(), sink);
    if (current) finish(current);
    current = null;
    const got = digest.digest();
    if (digest.bytes !== pack.size)
      result.packError = `pack is ${digest.bytes} bytes where the manifest says ${pack.size} (truncated?)`;
    else if (got !== pack.sha256)
      result.packError = `pack digest mismatch (${got.slice(0, 12)} != ${pack.sha256.slice(0, 12)})`;
  } catch (e) {
    if (current) {
      const c: Current = current;
      discard(c, `pack ended inside this entry (${(e as Error).message})`);
      current = null;
    }
    result.packError = (e as Error).message;
  }
  pump();
  while (writes.size || queued.length) {
    await Promise.all([...writes]);
    pump();
  }
  result.bytes = digest.bytes;
  for (const w of wanted) {
    const id = entryId(w);
    if (!seen.has(id)) {
      result.bad.push({
        entry: `${w.cache}/${w.name}`,
        reason: result.packError ? "not read: pack unreadable" : "missing from pack",
      });
    }
  }
  return result;
}

/**
 * Writes a verified entry's files into its staging place, one at a time and every byte counted: the
 * other files first, then the files Triton looks up first (group files), rewritten for the restore
 * location, last.
 */
async function writeEntry(c: Current): Promise<void> {
  if (c.bad) throw new Error(c.bad);
  const kind = c.target.kind;
  const isDir = kind.entryShape === "folder";
  await fs.promises.mkdir(isDir ? c.staged : path.dirname(c.staged), { recursive: true });
  const dest = (rel: string) => (rel ? path.join(c.staged, rel) : c.staged);
  // One file at a time per entry: with MAX_WRITING_ENTRIES entries per pack, open files stay bounded.
  for (const f of c.files) {
    if (f.streamed || kind.isRelocatable(f.rel)) continue;
    await createFileFully(dest(f.rel), f.chunks);
  }
  for (const f of c.files.filter((x) => kind.isRelocatable(x.rel))) {
    const data = kind.relocate(c.target.root, c.entryName, f.rel, Buffer.concat(f.chunks));
    await createFileFully(dest(f.rel), [data]);
  }
}

/** Maps a tar member to its cache, entry and file, or says why it is refused. */
function locate(
  member: ReadEntry,
  targets: Map<string, RestoreTarget>,
): { cache: string; entryName: string; rel: string; target: RestoreTarget } | string {
  if (!REGULAR.has(member.type)) return `${member.type} members are never extracted`;
  const p = member.path;
  if (p.startsWith("/") || /^[A-Za-z]:/.test(p)) return "absolute path";
  const parts = p.split("/");
  if (parts.some((s) => s === "" || s === "." || s === ".." || s.includes("\\") || s.includes("\0"))) {
    return "path with empty, '.' or '..' parts";
  }
  const [cache, ...rest] = parts;
  const target = targets.get(cache ?? "");
  if (!target) return "not a configured cache";
  let entryName: string;
  let rel: string;
  if (target.kind.entryShape === "folder") {
    if (rest.length !== 2) return "not <cache>/<entry>/<file>";
    entryName = rest[0] as string;
    rel = rest[1] as string;
  } else {
    entryName = rest.join("/");
    rel = "";
  }
  if (!target.kind.isEntryName(entryName) || entryName.startsWith(KCACHE_PRIVATE_PREFIX))
    return "bad entry name";
  return { cache: cache as string, entryName, rel, target };
}

/**
 * Moves a verified entry into place. A file replaces atomically; a folder that already exists is
 * moved aside first, then removed, so the cache never holds a mix of old and new files.
 */
function place(staged: string, root: string, entryName: string, staging: string): void {
  ensureRealDirs(root, path.posix.dirname(entryName) === "." ? "" : path.posix.dirname(entryName));
  const dest = path.join(root, entryName);
  try {
    fs.renameSync(staged, dest);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "EISDIR" && code !== "ENOTDIR") throw e;
    const aside = path.join(staging, `old-${randomBytes(6).toString("hex")}`);
    fs.renameSync(dest, aside);
    fs.renameSync(staged, dest);
    fs.rmSync(aside, { recursive: true, force: true });
  }
}

/** A fresh staging folder inside a cache root. */
export function makeStaging(root: string): string {
  fs.mkdirSync(root, { recursive: true });
  return fs.mkdtempSync(path.join(root, `${KCACHE_PRIVATE_PREFIX}restore-${process.pid}-`));
}
