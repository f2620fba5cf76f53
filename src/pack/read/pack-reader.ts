import { createHash } from "node:crypto";
import fs from "node:fs";
import { Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setImmediate } from "node:timers/promises";
import { entryId } from "../../manifest/entry-id.js";
import type { PackReadResult, PromisedPack, RestoreTarget, WantedEntry } from "../pack-request.js";
import { zstdEngine } from "../zstd/engines.js";
import { DeferredRewrites, WAITING } from "./deferred-rewrites.js";
import { StagedEntry } from "./entry-stager.js";
import { locateMember } from "./member-policy.js";
import { type MemberSink, type TarMember, TarReader } from "./tar-reader.js";

/** Tar overhead allowed per entry on top of its bytes (headers, padding, PAX names of ~10 files). */
const TAR_OVERHEAD_PER_ENTRY = 64 * 1024;

/** The most uncompressed tar bytes a pack may expand to, by what its manifest promises. */
export function tarBytesLimit(pack: PromisedPack): number {
  return pack.entryBytes + pack.entries * TAR_OVERHEAD_PER_ENTRY + 1024 * 1024;
}

/**
 * Restores the wanted entries of one pack, fed its compressed bytes (`compressed`) and their
 * decompressed tar stream (`tar`), synchronously. Every member is checked before a byte is written
 * (see locateMember and StagedEntry); the pack may not run past its listed size, nor expand past its
 * entries' bytes plus tar overhead. Entries are verified and placed as the pack is read, one at a
 * time, so memory holds one decompression window and the entry's small relocatable files; entries
 * with files rewritten by a child process (torch.compile's pickles) are placed at the pack's end,
 * after one process rewrote all of them.
 */
export class PackRestorer {
  readonly result: PackReadResult = { restored: [], bad: [], refused: [], packError: null, bytes: 0 };
  private readonly byId: Map<string, WantedEntry>;
  private readonly seen = new Set<string>();
  private readonly hash = createHash("sha256");
  private readonly reader: TarReader;
  private readonly tarLimit: number;
  private tarBytes = 0;
  private current: StagedEntry | null = null;
  private currentId = "";
  private readonly later = new DeferredRewrites<StagedEntry>();

  constructor(
    private readonly pack: PromisedPack,
    private readonly wanted: WantedEntry[],
    private readonly targets: Map<string, RestoreTarget>,
  ) {
    this.byId = new Map(wanted.map((w) => [entryId(w), w]));
    this.tarLimit = tarBytesLimit(pack);
    this.reader = new TarReader((m) => this.member(m));
  }

  /** Compressed bytes as read from the store: counted, hashed and bounded by the manifest. */
  compressed(chunk: Buffer): void {
    this.result.bytes += chunk.length;
    if (this.result.bytes > this.pack.size)
      throw new Error(`object is longer than the ${this.pack.size} bytes its manifest says`);
    this.hash.update(chunk);
  }

  /** Decompressed tar bytes, in order. */
  tar(chunk: Buffer): void {
    this.tarBytes += chunk.length;
    if (this.tarBytes > this.tarLimit) {
      throw new Error(
        `pack expands past the ${this.tarLimit} bytes its manifest allows (a decompression bomb?)`,
      );
    }
    this.reader.write(chunk);
  }

  /** Ends the read: `error` is why the pack could not be read to its end, if it could not. */
  async finish(error: Error | null): Promise<PackReadResult> {
    const r = this.result;
    let fault = error;
    if (!fault) {
      try {
        this.reader.end();
      } catch (e) {
        fault = e as Error;
      }
    }
    if (fault) {
      if (this.current) {
        this.current.discard();
        r.bad.push({
          entry: this.label(this.current),
          reason: `pack ended inside this entry (${fault.message})`,
        });
        this.current = null;
      }
      r.packError = fault.message;
    } else {
      this.closeEntry();
      const got = this.hash.digest("hex");
      if (r.bytes !== this.pack.size)
        r.packError = `pack is ${r.bytes} bytes where the manifest says ${this.pack.size} (truncated?)`;
      else if (this.pack.sha256 !== null && got !== this.pack.sha256)
        r.packError = `pack digest mismatch (${got.slice(0, 12)} != ${this.pack.sha256?.slice(0, 12)})`;
    }
    // Entries verified whole before any fault: their rewrites run, then they are placed or discarded.
    const files = this.later.pending;
    const t0 = performance.now();
    for (const { entry, reason } of await this.later.run()) this.outcome(entry, reason);
    if (files) r.rewriter = { processes: 1, files, seconds: (performance.now() - t0) / 1000 };
    for (const w of this.wanted) {
      if (!this.seen.has(entryId(w))) {
        r.bad.push({
          entry: `${w.cache}/${w.name}`,
          reason: r.packError ? "not read: pack unreadable" : "missing from pack",
        });
      }
    }
    return r;
  }

  private member(m: TarMember): MemberSink | null {
    const located = locateMember(m, this.targets);
    if (typeof located === "string") {
      this.result.refused.push(`${m.path}: ${located}`);
      const c = this.current;
      if (c && m.path.startsWith(`${c.wanted.cache}/${c.wanted.name}/`)) c.fail(`unsafe member ${m.path}`);
      return null;
    }
    const id = entryId({ cache: located.cache, name: located.entryName });
    if (!this.current || this.currentId !== id) {
      this.closeEntry();
      const w = this.byId.get(id);
      if (!w) return null;
      const duplicate = this.seen.has(id);
      this.seen.add(id);
      this.current = new StagedEntry(
        w,
        located.entryName,
        located.target,
        duplicate ? "entry appears twice in the pack" : null,
      );
      this.currentId = id;
    }
    return this.current.file(located.rel, m.size);
  }

  /** Verifies and places the entry just read (or discards it). */
  private closeEntry(): void {
    const c = this.current;
    if (!c) return;
    this.current = null;
    const reason = c.finish(this.later);
    if (reason !== WAITING) this.outcome(c, reason);
  }

  private outcome(c: StagedEntry, reason: string | null): void {
    if (reason) this.result.bad.push({ entry: this.label(c), reason });
    else this.result.restored.push(c.wanted);
  }

  private label(c: StagedEntry): string {
    return `${c.wanted.cache}/${c.wanted.name}`;
  }
}

/**
 * A pack file's bytes in 1 MiB pieces, read synchronously. With `reuse`, every piece is the same
 * buffer, refilled: for a consumer that is done with a piece before asking for the next (the
 * in-thread decompressor), so reading a pack allocates nothing per piece.
 */
export async function* packFileChunks(file: string, reuse: boolean): AsyncIterable<Buffer> {
  // A local store's file: never a blocking open of a FIFO, never through a link (store/local.ts).
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW);
  try {
    if (!fs.fstatSync(fd).isFile()) throw new Error(`${file}: not a regular file`);
    let buf = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) return;
      yield buf.subarray(0, n);
      if (!reuse) buf = Buffer.allocUnsafe(1 << 20);
      // Let the event loop run between pieces: the main thread reads packs beside its workers.
      await setImmediate();
    }
  } finally {
    fs.closeSync(fd);
  }
}

export interface PackRead {
  /** The compressed pack: a stream, or a local store's file. */
  from: AsyncIterable<Buffer> | { file: string };
  pack: PromisedPack;
  wanted: WantedEntry[];
  targets: Map<string, RestoreTarget>;
  /** The Zstandard engine asked for ("" for the best that works). */
  zstd: string;
  onBytes?: (n: number) => void;
}

/**
 * Reads one compressed pack from `read.from` (a stream, or a local store's file) and restores the wanted entries from it (PackRestorer).
 * Decompresses in this thread with an in-process engine (zstd-napi, the WebAssembly one), else
 * through a stream engine (Node's zlib, the system zstd).
 */
export async function readPack(read: PackRead): Promise<PackReadResult> {
  const { from, onBytes } = read;
  const restorer = new PackRestorer(read.pack, read.wanted, read.targets);
  let error: Error | null = null;
  try {
    const engine = await zstdEngine(read.zstd);
    const source = "file" in from ? packFileChunks(from.file, engine.chunks !== null) : from;
    if (engine.chunks) {
      const dec = engine.chunks.decompressor();
      try {
        for await (const chunk of source) {
          restorer.compressed(chunk);
          onBytes?.(chunk.length);
          dec.push(chunk, (tar) => restorer.tar(tar));
        }
        dec.end();
      } finally {
        dec.release();
      }
    } else {
      const counted = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          try {
            restorer.compressed(chunk);
          } catch (e) {
            cb(e as Error);
            return;
          }
          onBytes?.(chunk.length);
          cb(null, chunk);
        },
      });
      const sink = new Writable({
        highWaterMark: 1 << 20,
        write(chunk: Buffer, _enc, cb) {
          try {
            restorer.tar(chunk);
            cb();
          } catch (e) {
            cb(e as Error);
          }
        },
      });
      await pipeline(source, counted, engine.decompressStream(), sink);
    }
  } catch (e) {
    error = e as Error;
  }
  return restorer.finish(error);
}

/** The outcome of a read that got no byte of its pack: every wanted entry bad for `reason`, the error as the pack's. */
export function unreadPack(wanted: WantedEntry[], reason: string, error: Error): PackReadResult {
  return {
    restored: [],
    bad: wanted.map((w) => ({ entry: `${w.cache}/${w.name}`, reason })),
    refused: [],
    packError: error.message,
    bytes: 0,
  };
}
