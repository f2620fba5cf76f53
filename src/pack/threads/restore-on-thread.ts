import { pickleInterpreter } from "../../kinds/pickle-rewriter.js";
import type { Store } from "../../store/store.js";
import type { PackReadResult, PromisedPack } from "../pack-request.js";
import type { PackRead } from "../read/pack-reader.js";
import { targetData } from "./thread-messages.js";
import type { ThreadPool } from "./thread-pool.js";

/** Compressed bytes forwarded to a thread and not yet read by it. */
const IN_FLIGHT = 4 * 1024 * 1024;

/** A pack read on a thread: what readPack takes, with the pool, and the store and object the bytes come from. */
export interface ThreadRestore extends Omit<PackRead, "from"> {
  pool: ThreadPool;
  store: Store;
  /** The pack's object in the store. */
  object: string;
}

/**
 * Restores one pack on a pool thread. A local store's pack is read by the thread from its file; any
 * other store's is downloaded here and forwarded chunk by chunk, at most IN_FLIGHT bytes ahead of
 * the thread, so a fast download never piles up in memory.
 */

export async function restoreOnThread(restore: ThreadRestore): Promise<PackReadResult> {
  const { pool, store, object, pack, wanted, targets, onBytes } = restore;
  const file = store.localFile?.(object) ?? null;
  let result: PackReadResult | null = null;
  let failure: string | null = null;
  let inFlight = 0;
  let over = false;
  let wake: (() => void) | null = null;
  const rouse = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const promise: PromisedPack = {
    sha256: pack.sha256,
    size: pack.size,
    entryBytes: pack.entryBytes,
    entries: pack.entries,
  };

  try {
    await runOnPool();
  } finally {
    // However the job ended (a thread that died included), the download loop stops and its stream closes.
    over = true;
    rouse();
  }
  if (result) return result;
  throw new Error(failure ?? "the pack worker gave no result");

  function runOnPool(): Promise<void> {
    return pool.run(
      (job, post) => {
        post({
          op: "restore",
          job,
          pack: promise,
          wanted,
          targets: targetData(targets),
          file,
          zstd: restore.zstd,
          python: pickleInterpreter(),
        });
        if (file) return;
        const forward = async () => {
          const source = await store.get(object, pack.size);
          try {
            for await (const chunk of source as AsyncIterable<Buffer>) {
              if (over) break;
              const data = new Uint8Array(chunk);
              inFlight += data.length;
              post({ op: "chunk", job, data }, [data.buffer as ArrayBuffer]);
              while (inFlight > IN_FLIGHT && !over) await new Promise<void>((r) => (wake = r));
            }
          } finally {
            source.destroy();
          }
          if (!over) post({ op: "end", job });
        };
        forward().catch((e: Error) => {
          if (!over) post({ op: "fail", job, message: e.message });
        });
      },
      (m) => {
        if (m.op === "bytes") onBytes?.(m.n);
        else if (m.op === "ack") {
          inFlight -= m.n;
          rouse();
        } else if (m.op === "restored" || m.op === "failed") {
          if (m.op === "restored") result = m.result;
          else failure = m.message;
          over = true;
          rouse();
          return true;
        }
        return false;
      },
    );
  }
}
