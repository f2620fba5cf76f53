import { spawn, spawnSync } from "node:child_process";
import { Duplex, PassThrough } from "node:stream";

/**
 * Zstandard streams for packs. The system `zstd` runs in its own process (a second core for
 * (de)compression while Node parses or writes tar); zstd-napi is the in-process fallback.
 */
export type ZstdEngine = "system" | "napi";

let systemZstd: boolean | undefined;

/** The engine to use: $KCACHE_ZSTD (system|napi) wins, else the system zstd when it runs. */
export function zstdEngine(env: NodeJS.ProcessEnv = process.env): ZstdEngine {
  const forced = env.KCACHE_ZSTD;
  if (forced === "system" || forced === "napi") return forced;
  systemZstd ??= spawnSync("zstd", ["--version"], { stdio: "ignore" }).status === 0;
  return systemZstd ? "system" : "napi";
}

/** A duplex that compresses what is written to it. */
export async function compressStream(level: number, engine: ZstdEngine = zstdEngine()): Promise<Duplex> {
  if (engine === "system") return processDuplex("zstd", [`-${level}`, "-T0", "-q", "-c"]);
  const { CompressStream } = await import("zstd-napi");
  return new CompressStream({ compressionLevel: level, checksumFlag: true });
}

/** A duplex that decompresses what is written to it; corrupt input makes it emit an error. */
export async function decompressStream(engine: ZstdEngine = zstdEngine()): Promise<Duplex> {
  if (engine === "system") return processDuplex("zstd", ["-d", "-q", "-c"]);
  const { DecompressStream } = await import("zstd-napi");
  return new DecompressStream();
}

/**
 * Wraps a child process as a duplex: writes go to its stdin, reads come from its stdout, and a
 * non-zero exit becomes an 'error' carrying its stderr. Destroying the duplex kills the process.
 */
function processDuplex(cmd: string, args: string[]): Duplex {
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
  const out = new PassThrough({ highWaterMark: 1 << 20 });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdout.pipe(out, { end: false });
  child.on("close", (code, signal) => {
    if (code === 0) out.end();
    else
      out.destroy(
        new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`),
      );
  });
  child.on("error", (e) => out.destroy(e));
  // EPIPE when the process died early is reported through its exit status instead.
  child.stdin.on("error", () => {});
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
  };
  out.on("close", stop);
  const duplex = Duplex.from({ writable: child.stdin, readable: out });
  // A reader that gives up early (a pack past its bounds) destroys the duplex: the process must go
  // too, or it keeps the job alive.
  duplex.on("close", () => {
    stop();
    child.stdout.destroy();
    child.stdin.destroy();
  });
  return duplex;
}
