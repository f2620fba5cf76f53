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
 * Packs entries as tar, in their stored form, through a zstd compressor, yielding compressed pieces.
 * Each entry's files are all opened before a byte is used (an entry whose file vanished since the
 * scan is reported, not half packed); file bytes go through one reused buffer, hashed on the way into
 * the entry's digest. Synchronous: run in a worker thread, or driven chunk by chunk on the main one.
 */
export function* buildPack(
  inputs: BuildInput[],
  kindOf: (k: CacheKindName) => CacheKind,
  compressor: ChunkCompressor,
  result: BuiltPack,
): Generator<Buffer> {
  const batch = Buffer.allocUnsafe(BATCH);
  let fill = 0;
  let out: Buffer[] = [];
  const emit = (c: Buffer) => out.push(c);
  const flush = function* (): Generator<Buffer> {
    if (fill) compressor.push(batch.subarray(0, fill), emit);
    fill = 0;
    if (out.length) {
      const ready = out;
      out = [];
      yield* ready;
    }
  };
  const put = function* (b: Buffer): Generator<Buffer> {
    let o = 0;
    while (o < b.length) {
      const n = Math.min(BATCH - fill, b.length - o);
      b.copy(batch, fill, o, o + n);
      fill += n;
      o += n;
      if (fill === BATCH) yield* flush();
    }
  };

  for (const input of inputs) {
    const kind = kindOf(input.kind);
    const files = openForPack(kind, input, result);
    if (!files) continue;
    const digest = new EntryDigest();
    try {
      for (const f of files) {
        digest.beginFile(f.rel, f.size);
        yield* put(fileHeader(tarPathOf(input.cache, input.entry.name, f.rel), f.size));
        if (f.data) {
          digest.update(f.data);
          yield* put(f.data);
        } else {
          // Read straight into the batch buffer: no per-file allocation.
          let pos = 0;
          while (pos < f.size) {
            const want = Math.min(BATCH - fill, f.size - pos);
            const n = fs.readSync(f.fd as number, batch, fill, want, pos);
            if (n === 0) throw new Error(`${input.entry.name}/${f.rel} shrank while being packed`);
            digest.update(batch.subarray(fill, fill + n));
            fill += n;
            pos += n;
            if (fill === BATCH) yield* flush();
          }
          fs.closeSync(f.fd as number);
          f.fd = null;
        }
        const pad = padding(f.size);
        if (pad.length) yield* put(pad);
      }
    } finally {
      closeEntry(files);
    }
    result.entries.push({
      cache: input.cache,
      name: input.entry.name,
      sha256: digest.digest(),
      size: digest.size,
      files: digest.files,
    });
  }
  yield* put(END_OF_ARCHIVE);
  yield* flush();
  compressor.end(emit);
  yield* out;
}
