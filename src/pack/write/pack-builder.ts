import fs from "node:fs";
import type { CacheKind, CacheKindName, FoundEntry } from "../../kinds/kind.js";
import { RelocationError } from "../../kinds/pickle-rewriter.js";
import { EntryDigest } from "../entry-digest.js";
import type { ChunkCompressor } from "../zstd/chunk-codecs.js";
import { closeEntry, type OpenedFile, openEntry } from "./entry-source.js";
import type { StoredFiles } from "./stored-forms.js";
import { END_OF_ARCHIVE, fileHeader, padding } from "./tar-header.js";

/** One entry to pack, as plain data (it crosses to worker threads). */
export interface BuildInput {
  cache: string;
  kind: CacheKindName;
  root: string;
  entry: FoundEntry;
  /** Its files' stored forms already written (stored-forms.ts). */
  stored?: StoredFiles;
}

export interface PackedEntry {
  cache: string;
  name: string;
  sha256: string;
  size: number;
  files: number;
  /** Where its frames lie in the compressed pack, [offset, bytes], when it was written to be read alone. */
  frame?: [number, number];
}

/** What a built pack holds: its entries as stored, and the entries whose files vanished since the scan. */
export interface BuiltPack {
  entries: PackedEntry[];
  /** "cache/name" of entries whose files disappeared between scan and pack. */
  vanished: string[];
  /** "cache/name: why" of entries that name their folder and could not be stored without it. */
  notRelocatable: string[];
  /** The compressed pack's sha256 and bytes, when the thread that built it hashed them. */
  sha256?: string;
  size?: number;
}

/** Where a file of an entry sits inside a pack. */
export function tarPathOf(cache: string, entryName: string, rel: string): string {
  return rel ? `${cache}/${entryName}/${rel}` : `${cache}/${entryName}`;
}

/** An entry's files opened for packing; null (and why, in `result`) when it vanished or cannot be stored. */
function openForPack(kind: CacheKind, input: BuildInput, result: BuiltPack): OpenedFile[] | null {
  try {
    const files = openEntry(kind, input.root, input.entry, input.stored);
    if (!files) result.vanished.push(`${input.cache}/${input.entry.name}`);
    return files;
  } catch (e) {
    if (!(e instanceof RelocationError)) throw e;
    result.notRelocatable.push(`${input.cache}/${input.entry.name}: ${e.message}`);
    return null;
  }
}

/** Tar bytes gathered before each compressor call; file reads go through a buffer of the same size. */
const BATCH = 1 << 20;

/**
 * Tar bytes on their way into a compressor: gathered in one reused batch buffer, compressed a batch
 * at a time, the compressed pieces handed out in order. Counts what it emitted, so a frame's place in
 * the pack is known.
 */
class TarBatches {
  private readonly batch = Buffer.allocUnsafe(BATCH);
  private fill = 0;
  private out: Buffer[] = [];
  /** Compressed bytes emitted so far: where the next frame starts. */
  emitted = 0;
  private readonly emit = (c: Buffer) => {
    this.emitted += c.length;
    this.out.push(c);
  };

  constructor(private readonly compressor: ChunkCompressor) {}

  *flush(): Generator<Buffer> {
    if (this.fill) this.compressor.push(this.batch.subarray(0, this.fill), this.emit);
    this.fill = 0;
    if (this.out.length) {
      const ready = this.out;
      this.out = [];
      yield* ready;
    }
  }

  *put(b: Buffer): Generator<Buffer> {
    let o = 0;
    while (o < b.length) {
      const n = Math.min(BATCH - this.fill, b.length - o);
      b.copy(this.batch, this.fill, o, o + n);
      this.fill += n;
      o += n;
      if (this.fill === BATCH) yield* this.flush();
    }
  }

  /** A file's bytes read straight into the batch buffer (no per-file allocation), hashed on the way. */
  *putFile(f: OpenedFile, digest: EntryDigest, what: string): Generator<Buffer> {
    let pos = 0;
    while (pos < f.size) {
      const want = Math.min(BATCH - this.fill, f.size - pos);
      const n = fs.readSync(f.fd as number, this.batch, this.fill, want, pos);
      if (n === 0) throw new Error(`${what} shrank while being packed`);
      digest.update(this.batch.subarray(this.fill, this.fill + n));
      this.fill += n;
      pos += n;
      if (this.fill === BATCH) yield* this.flush();
    }
  }

  /** Ends a frame after what was put so far (the compressor can: see ChunkCompressor.endFrame). */
  endFrame(): void {
    if (this.fill) this.compressor.push(this.batch.subarray(0, this.fill), this.emit);
    this.fill = 0;
    this.compressor.endFrame?.(this.emit);
  }

  *end(): Generator<Buffer> {
    yield* this.put(END_OF_ARCHIVE);
    yield* this.flush();
    this.compressor.end(this.emit);
    yield* this.out;
  }
}

/**
 * Packs entries as tar, in their stored form, through a zstd compressor, yielding compressed pieces.
 * Each entry's files are all opened before a byte is used (an entry whose file vanished since the
 * scan is reported, not half packed); file bytes go through one reused buffer, hashed on the way into
 * the entry's digest. With `frames` (and a compressor that can end them), each entry is in zstd
 * frames of its own at a recorded [offset, bytes], to be read alone by a ranged request (lazy
 * restores, issue 41). Synchronous: run in a worker thread, or driven chunk by chunk on the main one.
 */
export function* buildPack(
  inputs: BuildInput[],
  kindOf: (k: CacheKindName) => CacheKind,
  compressor: ChunkCompressor,
  result: BuiltPack,
  frames = false,
): Generator<Buffer> {
  const tar = new TarBatches(compressor);
  const framed = frames && compressor.endFrame !== undefined;
  for (const input of inputs) {
    const kind = kindOf(input.kind);
    const files = openForPack(kind, input, result);
    if (!files) continue;
    const start = tar.emitted;
    const digest = new EntryDigest();
    try {
      for (const f of files) {
        digest.beginFile(f.rel, f.size);
        yield* tar.put(fileHeader(tarPathOf(input.cache, input.entry.name, f.rel), f.size));
        if (f.data) {
          digest.update(f.data);
          yield* tar.put(f.data);
        } else {
          yield* tar.putFile(f, digest, `${input.entry.name}/${f.rel}`);
          fs.closeSync(f.fd as number);
          f.fd = null;
        }
        const pad = padding(f.size);
        if (pad.length) yield* tar.put(pad);
      }
    } finally {
      closeEntry(files);
    }
    if (framed) tar.endFrame();
    result.entries.push({
      cache: input.cache,
      name: input.entry.name,
      sha256: digest.digest(),
      size: digest.size,
      files: digest.files,
      ...(framed ? { frame: [start, tar.emitted - start] as [number, number] } : {}),
    });
  }
  yield* tar.end();
}
