import fs from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { JobMessage, ToMain } from "./thread-messages.js";

/**
 * Most threads a restore reads packs on, whatever the core count (this one among them, for a local
 * store): each other holds a V8 isolate and a zstd window (~16 MB of RSS). Measured on 16 cores, 1 GB:
 * 2 threads 1.6 s, 4 1.2 s, 8 0.8-1.0 s (zstd -d | tar -x 1.0-1.2 s), 12 no faster than 8; then 7
 * threads 1.32-1.65 s at 178 MB and 8 1.38-1.42 s at 193 MB in one run (tar 1.20-1.38 s): seven keep a
 * 1 GB restore within docs/stores.md's 200 MB with room to spare.
 */
const MAX_THREADS = 7;
/**
 * Most threads building packs in a save: each reads and hashes ~1 GB/s, and zstd's threads compress.
 * Two keep a 1 GB save within the 200 MB that docs/stores.md promises: measured on the GPU machine
 * (16 cores), 2 builders of 4 zstd threads 1.57-1.68 s at 170-176 MB, 3 of 2 1.30-1.42 s at 196 MB,
 * 4 of 2 1.15-1.32 s at 229-237 MB (bench/gpu/threads-on-device.sh). Each builder costs ~30 MB: its
 * isolate, its zstd context's job buffers, its chunks in flight.
 */
const MAX_BUILDERS = 2;

type Handler = (m: ToMain) => void;

interface Slot {
  worker: Worker;
  /** Given to a job: from acquire to release. */
  busy: boolean;
  handler: Handler | null;
  fail: ((e: Error) => void) | null;
}

/** The worker script: next to this module (build/, dist/), or build/'s when running from src/ (tests). */
function workerScript(): URL | null {
  for (const rel of ["./pack-worker.js", "../../../build/src/pack/threads/pack-worker.js"]) {
    const url = new URL(rel, import.meta.url);
    if (fs.existsSync(fileURLToPath(url))) return url;
  }
  return null;
}

/** The cores kcache may use: the threads asked for ($KCACHE_THREADS, in the job's runtime settings), else every core. */
export function coreCount(asked: number | null): number {
  return asked ?? os.availableParallelism();
}

/**
 * Compressed bytes one restore thread is given at least: below it a thread's start (loading the
 * modules, ~40 ms of CPU) and its memory (~16 MB of RSS) cost more than it saves. Measured on the
 * GPU machine (16 cores), a 113 MB cache in 16 MB of packs: 2 threads 0.48-0.60 s and 91 MB,
 * 8 threads 0.41-0.52 s and 188 MB (bench/gpu/threads-on-device.sh, SIZE=small).
 */
const RESTORE_BYTES_PER_THREAD = 8 * 1024 * 1024;

/**
 * How many threads suit `jobs` jobs of `bytes` compressed bytes in all: one per core up to
 * MAX_THREADS and one per RESTORE_BYTES_PER_THREAD (each costs ~16 MB of memory), or as many as
 * $KCACHE_THREADS asks for.
 */
export function threadCount(jobs: number, asked: number | null, bytes = Number.POSITIVE_INFINITY): number {
  const bySize = Math.max(1, Math.ceil(bytes / RESTORE_BYTES_PER_THREAD));
  return Math.max(0, Math.min(jobs, asked ?? Math.min(os.availableParallelism(), MAX_THREADS, bySize)));
}

/** zstd compression threads a save runs in all (each holds a few MiB of job buffers). */
const MAX_ZSTD_THREADS = 8;

/** Bytes a save gives each pack builder at least, and each zstd compression thread. */
const SAVE_BYTES_PER_BUILDER = 256 * 1024 * 1024;
const SAVE_BYTES_PER_ZSTD_THREAD = 32 * 1024 * 1024;

/**
 * How a save spreads over the cores: `threads` JS threads building packs (reading and hashing, ~1
 * GB/s each) and `zstd` native compression threads per pack (as `zstd -T`). Small machines build in
 * one thread and give zstd every core; large ones add a builder per 4 cores, and zstd's threads stop
 * at MAX_ZSTD_THREADS in all, which keeps a save's memory bounded on any machine. A small save (by
 * `bytes` to pack) starts fewer: on the GPU machine a 113 MB save took 0.51-0.65 s and 101 MB with one
 * builder and four zstd threads, 0.49-0.64 s and 214 MB with four builders and two each.
 */
export function saveThreads(
  jobs: number,
  asked: number | null,
  bytes = Number.POSITIVE_INFINITY,
): { threads: number; zstd: number } {
  const cores = coreCount(asked);
  const bySize = (per: number) => (asked ? Number.POSITIVE_INFINITY : Math.max(1, Math.ceil(bytes / per)));
  const threads = Math.max(
    1,
    Math.min(jobs, MAX_BUILDERS, Math.floor(cores / 4), bySize(SAVE_BYTES_PER_BUILDER)),
  );
  const zstd = Math.min(cores, MAX_ZSTD_THREADS, bySize(SAVE_BYTES_PER_ZSTD_THREAD));
  return { threads, zstd: Math.max(1, Math.floor(zstd / threads)) };
}

/**
 * Worker threads running pack jobs (pack-worker.ts), one job per thread at a time, started as jobs
 * need them. `open` gives null when no worker script is found: callers then run jobs in this thread.
 */
export class ThreadPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: ((s: Slot) => void)[] = [];
  private nextJob = 1;

  private constructor(
    private readonly script: URL,
    private readonly size: number,
  ) {}

  static open(size: number): ThreadPool | null {
    const script = workerScript();
    if (!script || size < 1) return null;
    return new ThreadPool(script, size);
  }

  /**
   * Runs one job on a free thread: `start` gets the job's id and the thread's post function and sends
   * the job; `onMessage` hears the thread's messages for it and returns true once the job is over.
   */
  async run(
    start: (job: number, post: (m: JobMessage, transfer?: ArrayBuffer[]) => void) => void,
    onMessage: (m: ToMain) => boolean,
  ): Promise<void> {
    const slot = await this.acquire();
    const job = this.nextJob++;
    try {
      await new Promise<void>((resolve, reject) => {
        slot.fail = reject;
        slot.handler = (m) => {
          if (m.job !== job) return;
          try {
            if (onMessage(m)) resolve();
          } catch (e) {
            reject(e);
          }
        };
        start(job, (m, transfer) => slot.worker.postMessage(m, transfer ?? []));
      });
    } finally {
      slot.handler = null;
      slot.fail = null;
      this.release(slot);
    }
  }

  /** Stops every thread; callers close the pool when their jobs are done (threads keep Node running). */
  async close(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    this.slots.length = 0;
  }

  private acquire(): Promise<Slot> {
    const free = this.slots.find((s) => !s.busy);
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    if (this.slots.length < this.size) {
      const slot = this.spawn();
      slot.busy = true;
      return Promise.resolve(slot);
    }
    return new Promise((r) => this.waiting.push(r));
  }

  private release(slot: Slot): void {
    if (!this.slots.includes(slot)) {
      // The thread died: a waiting job gets a fresh one.
      slot.busy = false;
      const waiter = this.waiting.shift();
      if (waiter) {
        const fresh = this.spawn();
        fresh.busy = true;
        waiter(fresh);
      }
      return;
    }
    const next = this.waiting.shift();
    if (next) next(slot);
    else slot.busy = false;
  }

  private spawn(): Slot {
    // A small young generation: a worker allocates little that lives, and each MiB is RSS (2 MiB,
    // not 4, took 12 MB off a 1 GB restore's eight threads).
    const worker = new Worker(this.script, { resourceLimits: { maxYoungGenerationSizeMb: 2 } });
    const slot: Slot = { worker, busy: false, handler: null, fail: null };
    worker.on("message", (m: ToMain) => slot.handler?.(m));
    const died = (e: Error) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      slot.fail?.(e);
    };
    worker.on("error", died);
    worker.on("exit", (code) => died(new Error(`pack worker exited (${code})`)));
    this.slots.push(slot);
    return slot;
  }
}
