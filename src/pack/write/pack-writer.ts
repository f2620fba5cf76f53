import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { StoreError } from "../../errors.js";
import { pickleInterpreter } from "../../kinds/pickle-rewriter.js";
import { cacheKind } from "../../kinds/registry.js";
import type { Store } from "../../store/store.js";
import { handedOver } from "../threads/handed-over-chunks.js";
import type { JobMessage } from "../threads/thread-messages.js";
import type { ThreadPool } from "../threads/thread-pool.js";
import { passThrough } from "../zstd/chunk-codecs.js";
import { zstdEngine } from "../zstd/engines.js";
import { DigestStream } from "./digest-stream.js";
import { type BuildInput, type BuiltPack, buildPack, type PackedEntry } from "./pack-builder.js";

export type { BuildInput, PackedEntry } from "./pack-builder.js";

export interface WrittenPack {
  object: string;
  sha256: string;
  /** Compressed bytes uploaded. */
  size: number;
  entryBytes: number;
  entries: PackedEntry[];
  /** Entries whose files disappeared between scan and pack ("cache/name"). */
  vanished: string[];
  /** Entries that name their folder and could not be stored without it ("cache/name: why"). */
  notRelocatable: string[];
}

/**
 * Packs entries as tar through zstd into one store object, hashing each entry in its stored form on
 * the way (buildPack). With a pool and an in-process engine the pack is built on a worker thread and
 * only its compressed bytes come back here to be stored; else it is built in this thread (compressed
 * in-process, or by a stream engine: Node's zlib, the system zstd). zstd-napi compresses on `zstdThreads`
 * native threads of its own, as `zstd -T` does. The store makes the object visible only once it is
 * complete.
 */
export interface PackWrite {
  store: Store;
  object: string;
  inputs: BuildInput[];
  level: number;
  /** The Zstandard engine asked for ("" for the best that works). */
  zstd: string;
  onBytes?: (n: number) => void;
  /** Worker threads to build the pack on; none: built in this thread. */
  pool?: ThreadPool | null;
  /** zstd's own compression threads for this pack. */
  zstdThreads?: number;
  /**
   * Each entry in zstd frames of its own, to be read alone (a lazy restore): where the engine can end
   * frames (zstd-napi, the WebAssembly one), else one stream as always.
   */
  frames?: boolean;
}

export async function writePack(write: PackWrite): Promise<WrittenPack> {
  const { store, object, inputs, level, onBytes, pool = null, zstdThreads = 1, frames = false } = write;
  const engine = await zstdEngine(write.zstd);
  const built: BuiltPack = { entries: [], vanished: [], notRelocatable: [] };
  const python = pickleInterpreter();
  const onThread = pool !== null && engine.chunks !== null;
  // A pack built on a thread is hashed there; here its bytes are only counted on their way.
  const digest = new DigestStream(onBytes, !onThread);
  let produced: Promise<unknown>;
  /** Stops the thread building this pack when the store fails it (else the thread waits for acks). */
  let cancel = () => {};
  if (onThread) {
    const body = new Readable({ read: () => release() });
    let post: ((m: JobMessage) => void) | null = null;
    const unacked: (() => void)[] = [];
    const release = () => {
      for (const a of unacked.splice(0)) a();
    };
    produced = pool
      .run(
        (job, send) => {
          post = send;
          cancel = () => send({ op: "cancel", job });
          send({ op: "build", job, inputs, level, zstdThreads, zstd: write.zstd, python, frames });
        },
        (m) => {
          if (m.op === "packed") {
            const chunk = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
            handedOver(chunk.length);
            // Acknowledged once the store's side takes it: the thread stays a few MiB ahead.
            const ack = () => post?.({ op: "ack", job: m.job, n: chunk.length });
            if (body.push(chunk)) ack();
            else unacked.push(ack);
            return false;
          }
          if (m.op === "built") {
            Object.assign(built, m.result);
            body.push(null);
            return true;
          }
          if (m.op === "failed") throw new Error(m.message);
          return false;
        },
      )
      .catch((e: Error) => {
        body.destroy(e);
        throw e;
      });
    produced = Promise.all([produced, pipeline(body, digest)]);
  } else if (engine.chunks) {
    const chunks = buildPack(inputs, cacheKind, engine.chunks.compressor(level, zstdThreads), built, frames);
    produced = pipeline(Readable.from(chunks, { objectMode: false }), digest);
  } else {
    const tar = buildPack(inputs, cacheKind, passThrough, built);
    produced = pipeline(Readable.from(tar, { objectMode: false }), engine.compressStream(level), digest);
  }
  const stored = store.put(object, digest).catch((e: unknown) => {
    digest.destroy();
    cancel();
    throw e;
  });
  // When the store fails (a full disk, a server error), the producing side fails too, with a vaguer
  // error: report the store's.
  const [made, put] = await Promise.allSettled([produced, stored]);
  if (put.status === "rejected") throw put.reason;
  if (made.status === "rejected") throw made.reason;
  if (put.value.size !== digest.bytes || (built.size !== undefined && built.size !== digest.bytes))
    throw new StoreError(
      `${store.description}: ${object}: stored ${put.value.size} bytes of ${digest.bytes}`,
    );
  return {
    object,
    sha256: built.sha256 ?? digest.digest(),
    size: digest.bytes,
    entryBytes: built.entries.reduce((s, e) => s + e.size, 0),
    entries: built.entries,
    vanished: built.vanished,
    notRelocatable: built.notRelocatable,
  };
}
