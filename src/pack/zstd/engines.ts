import { spawn, spawnSync } from "node:child_process";
import { Duplex, PassThrough } from "node:stream";
import zlib from "node:zlib";
import {
  type ChunkCompressor,
  type ChunkDecompressor,
  SyncCompressor,
  SyncDecompressor,
  zstdBinding,
} from "./chunk-codecs.js";
import { guardedDecompressor, guardedStream } from "./frame-guard.js";
import { FrameCompressor, JsDecompressor, loadWasm, loadXxhash, wasmFile } from "./portable.js";
import { ZstdUnavailableError } from "./zstd-unavailable.js";

/**
 * Which Zstandard engine compresses and decompresses packs here, best first:
 * - `napi`: zstd-napi, in-process on the pack threads, with zstd's own compression threads;
 * - `zlib`: Node's built-in zstd (Node 22.15+, 23.8+; the action runs on node24), a stream;
 * - `system`: the `zstd` binary in its own process, a stream;
 * - `wasm`: zstd's compressor built to WebAssembly and fzstd's decompressor, in-process, nothing
 *   native (Node 20 in a container without zstd).
 * $KCACHE_ZSTD names one outright. All write and read the same zstd format: packs saved by any
 * engine restore with any other, and all refuse the same damaged frames (frame-guard.ts).
 */
export type ZstdEngineName = "napi" | "zlib" | "system" | "wasm";
export const ZSTD_ENGINES: readonly ZstdEngineName[] = ["napi", "zlib", "system", "wasm"];

export interface ZstdEngine {
  name: ZstdEngineName;
  /** In-process engines, driven synchronously (worker threads run them); null for stream engines. */
  chunks: {
    compressor(level: number, threads: number): ChunkCompressor;
    decompressor(): ChunkDecompressor;
  } | null;
  compressStream(level: number): Duplex;
  decompressStream(): Duplex;
}

export { ZstdUnavailableError } from "./zstd-unavailable.js";

/** Node 22.15+'s zstd (node:zlib), which Node 20's type definitions lack. */
interface ZlibZstd {
  createZstdCompress?: (o: { params: Record<number, number> }) => Duplex;
  createZstdDecompress?: () => Duplex;
  constants: Record<string, number>;
}

const chosen = new Map<string, Promise<ZstdEngine>>();

/**
 * The engine `forced` names ($KCACHE_ZSTD, in the job's runtime settings), else the best that works
 * here: found once per thread.
 */
export function zstdEngine(forced: string): Promise<ZstdEngine> {
  let found = chosen.get(forced);
  if (!found) {
    found = pickEngine(forced);
    chosen.set(forced, found);
  }
  return found;
}

async function pickEngine(forced: string): Promise<ZstdEngine> {
  if (forced && !ZSTD_ENGINES.includes(forced as ZstdEngineName))
    throw new ZstdUnavailableError(
      `KCACHE_ZSTD=${forced} names no engine: use one of ${ZSTD_ENGINES.join(", ")}, or unset it`,
    );
  const order = forced ? [forced as ZstdEngineName] : ZSTD_ENGINES;
  const why: string[] = [];
  for (const name of order) {
    const engine = await tryEngine(name, why);
    if (engine) return engine;
  }
  throw new ZstdUnavailableError(
    `no Zstandard engine works here (${why.join("; ")}). Fix: install zstd (apt-get install -y zstd, ` +
      `apk add zstd, dnf install zstd)${forced ? `, or unset KCACHE_ZSTD=${forced}` : ""}, or run on Node 22.15 or later`,
  );
}

async function tryEngine(name: ZstdEngineName, why: string[]): Promise<ZstdEngine | null> {
  if (name === "napi") {
    const b = zstdBinding();
    if (!b) {
      why.push("zstd-napi is not installed");
      return null;
    }
    return inProcess(name, {
      compressor: (level, threads) => new SyncCompressor(b, level, threads),
      decompressor: () => guardedDecompressor(new SyncDecompressor(b)),
    });
  }
  if (name === "zlib") {
    const z = zlib as unknown as ZlibZstd;
    const { createZstdCompress: compress, createZstdDecompress: decompress } = z;
    const level = z.constants.ZSTD_c_compressionLevel;
    const checksum = z.constants.ZSTD_c_checksumFlag;
    if (!compress || !decompress || level === undefined || checksum === undefined) {
      why.push(`Node ${process.version} has no built-in zstd`);
      return null;
    }
    return {
      name,
      chunks: null,
      // No nbWorkers: Node 24's zlib pushes after EOF with zstd's threads on.
      compressStream: (l) => compress({ params: { [level]: l, [checksum]: 1 } }),
      decompressStream: () => guardedStream(decompress()),
    };
  }
  if (name === "system") {
    const probe = spawnSync("zstd", ["-V"], { stdio: "ignore", timeout: 10_000 });
    if (probe.status !== 0) {
      why.push(
        probe.error ? "no zstd on PATH" : `zstd -V failed (${probe.signal ?? `exit ${probe.status}`})`,
      );
      return null;
    }
    return {
      name,
      chunks: null,
      compressStream: (level) => processDuplex("zstd", [`-${level}`, "-T0", "-q", "-c"]),
      decompressStream: () => guardedStream(processDuplex("zstd", ["-d", "-q", "-c"])),
    };
  }
  const file = wasmFile();
  try {
    const [wasm, fzstd, xxh] = await Promise.all([loadWasm(), import("fzstd"), loadXxhash()]);
    return inProcess(name, {
      compressor: (level) => new FrameCompressor(wasm, level),
      decompressor: () => new JsDecompressor(fzstd, xxh),
    });
  } catch (e) {
    why.push(`the WebAssembly zstd did not load (${file ?? "zstd.wasm not found"}: ${(e as Error).message})`);
    return null;
  }
}

/** An in-process engine: its streams run its chunk codecs (a stream compresses on one zstd thread). */
function inProcess(name: ZstdEngineName, chunks: NonNullable<ZstdEngine["chunks"]>): ZstdEngine {
  return {
    name,
    chunks,
    compressStream: (level) => {
      const c = chunks.compressor(level, 1);
      return syncDuplex(
        (input, emit) => c.push(input, emit),
        (emit) => c.end(emit),
      );
    },
    decompressStream: () => {
      const d = chunks.decompressor();
      return syncDuplex(
        // A decompressor hands out views of a buffer it reuses: each piece is copied on.
        (input, emit) => d.push(input, (out) => emit(Buffer.from(out))),
        () => {
          d.end();
          d.release();
        },
      );
    },
  };
}

/** A synchronous codec (`push` each input piece, `end` once) as a duplex stream. */
function syncDuplex(
  push: (input: Buffer, emit: (out: Buffer) => void) => void,
  end: (emit: (out: Buffer) => void) => void,
): Duplex {
  return new Duplex({
    readableHighWaterMark: 1 << 20,
    write(chunk: Buffer, _enc, cb) {
      try {
        push(chunk, (out) => this.push(out));
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
    final(cb) {
      try {
        end((out) => this.push(out));
        this.push(null);
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
    read() {},
  });
}

/**
 * Wraps a child process as a duplex: writes go to its stdin, reads come from its stdout, and a
 * non-zero exit or a failure to start becomes an 'error' carrying its stderr. Destroying the duplex
 * kills the process.
 */
function processDuplex(cmd: string, args: string[]): Duplex {
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
  const out = new PassThrough({ highWaterMark: 1 << 20 });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdout.pipe(out, { end: false });
  const duplex = Duplex.from({ writable: child.stdin, readable: out });
  const fail = (e: Error) => {
    out.destroy(e);
    // Both sides, or a writer still pushing into a process that never started waits forever.
    duplex.destroy(e);
  };
  child.on("close", (code, signal) => {
    if (code === 0) out.end();
    else fail(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`));
  });
  child.on("error", (e) => fail(new Error(`${cmd} could not be started: ${e.message}`)));
  // EPIPE when the process died early is reported through its exit status instead.
  child.stdin.on("error", () => {});
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
  };
  out.on("close", stop);
  // A reader that gives up early (a pack past its bounds) destroys the duplex: the process must go
  // too, or it keeps the job alive.
  duplex.on("close", () => {
    stop();
    child.stdout.destroy();
    child.stdin.destroy();
  });
  return duplex;
}
