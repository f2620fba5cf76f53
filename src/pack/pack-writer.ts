import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { StoreError } from "../errors.js";
import type { CacheKind, FoundEntry } from "../kinds/kind.js";
import type { Store } from "../store/store.js";
import { DigestStream } from "./digest-stream.js";
import { EntryDigest } from "./entry-digest.js";
import { chunks, closeEntry, openEntry } from "./entry-source.js";
import { END_OF_ARCHIVE, fileHeader, padding } from "./tar-header.js";
import { compressStream } from "./zstd.js";

export interface PackInput {
  cache: string;
  kind: CacheKind;
  root: string;
  entry: FoundEntry;
}

export interface PackedEntry {
  cache: string;
  name: string;
  sha256: string;
  size: number;
  files: number;
}

export interface WrittenPack {
  object: string;
  sha256: string;
  /** Compressed bytes uploaded. */
  size: number;
  entryBytes: number;
  entries: PackedEntry[];
  /** Entries whose files disappeared between scan and pack ("cache/name"). */
  vanished: string[];
}

/** Where a file of an entry sits inside a pack. */
export function tarPathOf(cache: string, entryName: string, rel: string): string {
  return rel ? `${cache}/${entryName}/${rel}` : `${cache}/${entryName}`;
}

const BATCH = 1 << 20;

/**
 * Streams entries as tar through zstd into one store object, hashing each entry in its stored form
 * on the way. The store makes the object visible only once it is complete.
 */
export async function writePack(
  store: Store,
  object: string,
  inputs: PackInput[],
  level: number,
  onBytes?: (n: number) => void,
): Promise<WrittenPack> {
  const entries: PackedEntry[] = [];
  const vanished: string[] = [];

  function* tar(): Generator<Buffer> {
    let batch: Buffer[] = [];
    let batched = 0;
    const emit = function* (b: Buffer): Generator<Buffer> {
      if (b.length >= BATCH) {
        if (batched) yield Buffer.concat(batch, batched);
        batch = [];
        batched = 0;
        yield b;
        return;
      }
      batch.push(b);
      batched += b.length;
      if (batched >= BATCH) {
        yield Buffer.concat(batch, batched);
        batch = [];
        batched = 0;
      }
    };
    for (const input of inputs) {
      const files = openEntry(input.kind, input.root, input.entry);
      if (!files) {
        vanished.push(`${input.cache}/${input.entry.name}`);
        continue;
      }
      const digest = new EntryDigest();
      try {
        for (const f of files) {
          digest.beginFile(f.rel, f.size);
          yield* emit(fileHeader(tarPathOf(input.cache, input.entry.name, f.rel), f.size));
          for (const c of chunks(f)) {
            digest.update(c);
            yield* emit(c);
          }
          const pad = padding(f.size);
          if (pad.length) yield* emit(pad);
        }
      } finally {
        closeEntry(files);
      }
      entries.push({
        cache: input.cache,
        name: input.entry.name,
        sha256: digest.digest(),
        size: digest.size,
        files: digest.files,
      });
    }
    yield* emit(END_OF_ARCHIVE);
    if (batched) yield Buffer.concat(batch, batched);
  }

  const compressor = await compressStream(level);
  const digest = new DigestStream(onBytes);
  const produced = pipeline(Readable.from(tar(), { objectMode: false }), compressor, digest);
  const stored = store.put(object, digest).catch((e: unknown) => {
    digest.destroy();
    throw e;
  });
  // When the store fails (a full disk, a server error), the producing side fails too, with a vaguer
  // error: report the store's.
  const [made, put] = await Promise.allSettled([produced, stored]);
  if (put.status === "rejected") throw put.reason;
  if (made.status === "rejected") throw made.reason;
  if (put.value.size !== digest.bytes)
    throw new StoreError(
      `${store.description}: ${object}: stored ${put.value.size} bytes of ${digest.bytes}`,
    );
  return {
    object,
    sha256: digest.digest(),
    size: digest.bytes,
    entryBytes: entries.reduce((s, e) => s + e.size, 0),
    entries,
    vanished,
  };
}
