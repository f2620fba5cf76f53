/**
 * A worker thread that restores whole packs (PackRestorer) and writes whole packs (PackBuilder) for
 * the main thread's pool (thread-pool.ts). A restore reads a local store's pack file itself, or the
 * chunks the main thread forwards from a remote store, acknowledging each so that at most a few MiB
 * are in flight. It shares no memory with the main thread but the transferred chunks.
 */
import { createHash } from "node:crypto";
import { parentPort } from "node:worker_threads";
import { usePickleInterpreter } from "../../kinds/pickle-rewriter.js";
import { cacheKind } from "../../kinds/registry.js";
import { readPack } from "../read/pack-reader.js";
import { type BuiltPack, buildPack } from "../write/pack-builder.js";
import { zstdEngine } from "../zstd/engines.js";
import { type JobMessage, type ToMain, targetsFrom } from "./thread-messages.js";

const port = parentPort;
if (!port) throw new Error("pack-worker.ts runs only as a worker thread");

/** Chunks forwarded from the main thread for the restore in progress, as an async iterable. */
class ForwardedChunks implements AsyncIterable<Buffer> {
  private readonly queue: Buffer[] = [];
  private ended = false;
  private failed: Error | null = null;
  private wake: (() => void) | null = null;

  constructor(private readonly job: number) {}

  push(data: Uint8Array | null, error?: string): void {
    if (error) this.failed = new Error(error);
    else if (data) this.queue.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    else this.ended = true;
    this.wake?.();
    this.wake = null;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        yield next;
        send({ op: "ack", job: this.job, n: next.length });
        continue;
      }
      if (this.failed) throw this.failed;
      if (this.ended) return;
      await new Promise<void>((r) => {
        this.wake = r;
      });
    }
  }
}

function send(m: ToMain, transfer?: ArrayBuffer[]): void {
  port?.postMessage(m, transfer);
}

const forwarded = new Map<number, ForwardedChunks>();
/** Compressed bytes a build has sent that the main thread has not yet passed to the store. */
const flows = new Map<number, { inFlight: number; wake: (() => void) | null; cancelled: boolean }>();
const IN_FLIGHT = 8 * 1024 * 1024;

async function build(m: Extract<JobMessage, { op: "build" }>): Promise<void> {
  const { job, inputs, level, zstdThreads } = m;
  const { chunks } = await zstdEngine(m.zstd);
  if (!chunks) throw new Error("the pack worker has no in-process zstd engine");
  const flow = { inFlight: 0, wake: null as (() => void) | null, cancelled: false };
  flows.set(job, flow);
  try {
    const result: BuiltPack = { entries: [], vanished: [], notRelocatable: [] };
    // The pack's digest is taken here, on this thread, not on the main one that stores the bytes.
    const hash = createHash("sha256");
    let size = 0;
    const compressor = chunks.compressor(level, zstdThreads);
    for (const chunk of buildPack(inputs, cacheKind, compressor, result, m.frames)) {
      hash.update(chunk);
      size += chunk.length;
      const data = new Uint8Array(chunk);
      flow.inFlight += data.length;
      send({ op: "packed", job, data }, [data.buffer as ArrayBuffer]);
      while (flow.inFlight > IN_FLIGHT && !flow.cancelled) {
        await new Promise<void>((r) => {
          flow.wake = r;
        });
        flow.wake = null;
      }
      // The store gave up on this pack (a failed upload): stop building it.
      if (flow.cancelled) throw new Error("cancelled: the store did not take the pack");
    }
    result.sha256 = hash.digest("hex");
    result.size = size;
    send({ op: "built", job, result });
  } finally {
    flows.delete(job);
  }
}

port.on("message", (m: JobMessage) => {
  if (m.op === "chunk") forwarded.get(m.job)?.push(m.data);
  else if (m.op === "end") forwarded.get(m.job)?.push(null);
  else if (m.op === "fail") forwarded.get(m.job)?.push(null, m.message);
  else if (m.op === "restore") {
    usePickleInterpreter(m.python);
    const source = m.file ? { file: m.file } : new ForwardedChunks(m.job);
    if (source instanceof ForwardedChunks) forwarded.set(m.job, source);
    readPack({
      from: source,
      pack: m.pack,
      wanted: m.wanted,
      targets: targetsFrom(m.targets, cacheKind),
      zstd: m.zstd,
      onBytes: (n) => send({ op: "bytes", job: m.job, n }),
    })
      .then((result) => send({ op: "restored", job: m.job, result }))
      .catch((e: Error) => send({ op: "failed", job: m.job, message: e.message }))
      .finally(() => forwarded.delete(m.job));
  } else if (m.op === "build") {
    usePickleInterpreter(m.python);
    build(m).catch((e: Error) => send({ op: "failed", job: m.job, message: e.message }));
  } else if (m.op === "ack" || m.op === "cancel") {
    const flow = flows.get(m.job);
    if (flow) {
      if (m.op === "ack") flow.inFlight -= m.n;
      else flow.cancelled = true;
      flow.wake?.();
    }
  }
});
