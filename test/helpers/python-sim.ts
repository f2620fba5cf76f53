import { execFile, execFileSync } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";

export const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

export interface SimOptions {
  plain?: number;
  autotuned?: number;
  compileMs?: number;
  /** Kernel names start with this (another workload, or a pull request's own kernels). */
  prefix?: string;
  /** Another Triton release line (a stack change: every kernel key changes). */
  line?: string;
  /** Simulate Triton-Ascend instead of Triton 3.6 (needs `ascendHome`, as set_env.sh sets it). */
  ascend?: { line: "3.2" | "3.5"; ascendHome: string };
  /** More environment (kcache's hook: PYTHONPATH and KCACHE_TELEMETRY_FILE from telemetryEnv). */
  env?: NodeJS.ProcessEnv;
}

type SimResult = {
  compiled: number;
  loaded: number;
  seconds: number;
  /** Entry folders the run wrote into: what it compiled (kernels, launchers, autotune results). */
  written: string[];
};

/** The simulated workload's command line and environment against a cache directory. */
function simCommand(cacheDir: string, opts: SimOptions): { args: string[]; env: NodeJS.ProcessEnv } {
  const args = [
    path.join(SIM, "workload.py"),
    String(opts.plain ?? 4),
    String(opts.autotuned ?? 2),
    ...(opts.prefix ? ["--prefix", opts.prefix] : []),
  ];
  const passed = ["KCACHE_TELEMETRY_FILE", "KCACHE_LAZY_SOCKET", "KCACHE_LAZY_WAIT", "KCACHE_LIVE"] as const;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PYTHONPATH: opts.env?.PYTHONPATH ? `${opts.env.PYTHONPATH}:${SIM}` : SIM,
    TRITON_CACHE_DIR: cacheDir,
    TRITON_SIM_COMPILE_MS: String(opts.compileMs ?? 5),
    ...(opts.line ? { TRITON_SIM_LINE: opts.line } : {}),
    ...(opts.ascend
      ? {
          TRITON_SIM_BACKEND: "ascend",
          TRITON_SIM_LINE: opts.ascend.line,
          ASCEND_HOME_PATH: opts.ascend.ascendHome,
        }
      : {}),
  };
  for (const k of passed) if (opts.env?.[k]) env[k] = opts.env[k];
  return { args, env };
}

const lastLine = (out: string) => JSON.parse(out.trim().split("\n").pop() as string) as SimResult;

/** Runs the simulated Triton workload (a real Python process) against a cache directory. */
export function runSimWorkload(cacheDir: string, opts: SimOptions = {}): SimResult {
  const { args, env } = simCommand(cacheDir, opts);
  return lastLine(execFileSync("python3", args, { env, stdio: ["ignore", "pipe", "pipe"] }).toString());
}

/** runSimWorkload without blocking this process (kcache serves the job's lookups here meanwhile). */
export async function runSimWorkloadAsync(cacheDir: string, opts: SimOptions = {}): Promise<SimResult> {
  const { args, env } = simCommand(cacheDir, opts);
  const { stdout } = await promisify(execFile)("python3", args, { env });
  return lastLine(stdout);
}
