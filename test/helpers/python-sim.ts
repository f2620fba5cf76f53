import { execFileSync } from "node:child_process";
import path from "node:path";

const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

/** Runs the simulated Triton workload (a real Python process) against a cache directory. */
export function runSimWorkload(
  cacheDir: string,
  opts: { plain?: number; autotuned?: number; compileMs?: number } = {},
) {
  const out = execFileSync(
    "python3",
    [path.join(SIM, "workload.py"), String(opts.plain ?? 4), String(opts.autotuned ?? 2)],
    {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PYTHONPATH: SIM,
        TRITON_CACHE_DIR: cacheDir,
        TRITON_SIM_COMPILE_MS: String(opts.compileMs ?? 5),
      },
    },
  ).toString();
  return JSON.parse(out.trim().split("\n").pop() as string) as {
    compiled: number;
    loaded: number;
    seconds: number;
  };
}
