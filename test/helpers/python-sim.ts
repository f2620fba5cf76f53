import { execFileSync } from "node:child_process";
import path from "node:path";

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

/** Runs the simulated Triton workload (a real Python process) against a cache directory. */
export function runSimWorkload(cacheDir: string, opts: SimOptions = {}) {
  const out = execFileSync(
    "python3",
    [
      path.join(SIM, "workload.py"),
      String(opts.plain ?? 4),
      String(opts.autotuned ?? 2),
      ...(opts.prefix ? ["--prefix", opts.prefix] : []),
    ],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PYTHONPATH: opts.env?.PYTHONPATH ? `${opts.env.PYTHONPATH}:${SIM}` : SIM,
        ...(opts.env?.KCACHE_TELEMETRY_FILE ? { KCACHE_TELEMETRY_FILE: opts.env.KCACHE_TELEMETRY_FILE } : {}),
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
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  ).toString();
  return JSON.parse(out.trim().split("\n").pop() as string) as {
    compiled: number;
    loaded: number;
    seconds: number;
    /** Entry folders the run wrote into: what it compiled (kernels, launchers, autotune results). */
    written: string[];
  };
}
