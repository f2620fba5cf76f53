import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { boundedText } from "../../bounded-file.js";
import type { DeviceFacts, PlanEntry } from "../../cache/plan/plan.js";
import { makeFolders } from "../../make-folders.js";
import { shippedPython, telemetryEnv } from "../../telemetry/hook.js";

/** The longest delay Node's timers keep (a longer one fires after 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** What a worker said of one plan entry (python/kcache_prewarm/compile_plan.py). */
export interface EntryOutcome {
  i: number;
  outcome: "unchanged" | "compiled" | "cached" | "missing" | "failed";
  /** unchanged: whether this machine computes the key the GPU job had (true), another (false), or why it could not tell. */
  sameKey?: boolean | string | null;
  hash?: string;
  why?: string;
  seconds?: number;
}

export interface WorkersReport {
  outcomes: EntryOutcome[];
  /** Workers that ended without their last line (killed, crashed, timed out), with their exit. */
  broken: string[];
  /** Whether any worker mapped the CUDA driver library or initialised CUDA (it must not). */
  touchedCuda: boolean;
  /** Each worker that mapped the driver library or initialised CUDA: after what, and whether cuInit ever ran. */
  cuda: string[];
  /** The workers' telemetry files (the hook's record of what they wrote, for the save). */
  telemetry: string[];
  seconds: number;
}

/** The compile worker, shipped in the package's python/ folder. */
export function workerScript(): string {
  return shippedPython("kcache_prewarm", "compile_plan.py");
}

const OUTCOMES = new Set<string>(["unchanged", "compiled", "cached", "missing", "failed"]);

/** How long a worker's stderr may stay open after it exited (held by a process it left behind). */
const STDERR_GRACE_MS = 2000;

/** The most bytes of results one worker may write (a line per entry, about 200 bytes each). */
const MAX_RESULT_BYTES = 64 * 1024 * 1024;

/**
 * Runs `workers` compile workers over the plan in parallel, with no GPU visible to them
 * (CUDA_VISIBLE_DEVICES and its kin empty) and kcache's hook in (their writes are attributed to this
 * job, their compiles recorded in the plan). Each is ended, with its process group, at `timeoutMs`.
 */
export async function runWorkers(opts: {
  python: string;
  root: string;
  entries: PlanEntry[];
  device: DeviceFacts | null;
  workers: number;
  env: NodeJS.ProcessEnv;
  tmp: string;
  timeoutMs: number;
}): Promise<WorkersReport> {
  const t0 = performance.now();
  makeFolders(opts.tmp);
  const work = path.join(opts.tmp, "plan-work.json");
  fs.writeFileSync(work, JSON.stringify({ root: opts.root, device: opts.device, entries: opts.entries }));
  const noGpu = {
    CUDA_VISIBLE_DEVICES: "",
    HIP_VISIBLE_DEVICES: "",
    ROCR_VISIBLE_DEVICES: "",
    ASCEND_RT_VISIBLE_DEVICES: "",
  };
  const runs = Array.from({ length: opts.workers }, (_, w) => {
    const results = path.join(opts.tmp, `worker-${w}.jsonl`);
    const telemetry = path.join(opts.tmp, `worker-${w}.telemetry.jsonl`);
    fs.rmSync(results, { force: true });
    const env = { ...telemetryEnv(opts.env, telemetry), ...noGpu, PYTHONUNBUFFERED: "1" };
    return {
      w,
      results,
      telemetry,
      done: runOne(opts, env, [work, String(w), String(opts.workers), results]),
    };
  });
  const report: WorkersReport = {
    outcomes: [],
    broken: [],
    touchedCuda: false,
    cuda: [],
    telemetry: [],
    seconds: 0,
  };
  for (const r of runs) {
    const exit = await r.done;
    report.telemetry.push(r.telemetry);
    const lines = readLines(r.results);
    const dones = lines.filter((l) => l.done === true);
    // Any "done" line that says CUDA counts: the pull request's code, run by the worker, could write
    // one saying none before the worker's own.
    const cudaLine = dones.find((l) => l.libcuda === true || l.cudaInitialized === true);
    if (dones.length === 0)
      report.broken.push(`worker ${r.w} ${exit.why}${exit.tail ? `: ${exit.tail}` : ""}`);
    else if (cudaLine) {
      // The driver library mapped is not a context made (torch's CUDA build links it): cuInit is.
      const driver = typeof cudaLine.driver === "string" ? cudaLine.driver.slice(0, 200) : "state unknown";
      if (cudaLine.cudaInitialized === true || !driver.startsWith("loaded, never initialised"))
        report.touchedCuda = true;
      const after = typeof cudaLine.libcudaAfter === "string" ? cudaLine.libcudaAfter.slice(0, 300) : "?";
      report.cuda.push(
        `worker ${r.w}: libcuda.so ${cudaLine.libcuda === true ? `mapped (after ${after}): ${driver}` : "not mapped"}; torch.cuda ${cudaLine.cudaInitialized === true ? "initialised" : "not initialised"}`,
      );
    }
    // A worker runs the pull request's code, which may write this file too: only lines of the right shape.
    for (const l of lines)
      if (Number.isInteger(l.i) && typeof l.outcome === "string" && OUTCOMES.has(l.outcome))
        report.outcomes.push({
          i: l.i as number,
          outcome: l.outcome as EntryOutcome["outcome"],
          sameKey: typeof l.sameKey === "boolean" || typeof l.sameKey === "string" ? l.sameKey : null,
          ...(typeof l.hash === "string" && /^[0-9a-f]{64}$/.test(l.hash) ? { hash: l.hash } : {}),
          ...(typeof l.why === "string" ? { why: l.why.slice(0, 2000) } : {}),
          ...(typeof l.seconds === "number" ? { seconds: l.seconds } : {}),
        });
  }
  report.outcomes.sort((a, b) => a.i - b.i);
  report.seconds = (performance.now() - t0) / 1000;
  return report;
}

function runOne(
  opts: { python: string; root: string; timeoutMs: number },
  env: NodeJS.ProcessEnv,
  args: string[],
): Promise<{ why: string; tail: string }> {
  return new Promise((resolve) => {
    let tail = "";
    const child = spawn(opts.python, [workerScript(), ...args], {
      cwd: opts.root,
      env,
      detached: true,
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.on("data", (d: Buffer) => {
      tail = (tail + d.toString("utf8")).slice(-2000);
    });
    const timer = setTimeout(
      () => {
        try {
          if (child.pid) process.kill(-child.pid, "SIGKILL");
        } catch {}
        // Node fires a timer over 2^31-1 ms (24.8 days) at once: a longer timeout is as good as that.
      },
      Math.min(opts.timeoutMs, MAX_TIMER_MS),
    );
    child.on("error", (e) => {
      clearTimeout(timer);
      resolve({ why: `could not start ${opts.python} (${e.message})`, tail: "" });
    });
    let linger: NodeJS.Timeout | undefined;
    const ended = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      clearTimeout(linger);
      const lastLines = tail.trim().split("\n").slice(-3).join(" | ");
      resolve({ why: signal ? `ended by ${signal}` : `exited ${code}`, tail: lastLines });
    };
    // stderr closes when every process holding it has: a daemon the worker started in a session of its
    // own (out of reach of the group kill) would hold it for ever. The worker's exit ends the wait.
    child.on("exit", (code, signal) => {
      linger = setTimeout(() => {
        child.stderr?.destroy();
        ended(code, signal);
      }, STDERR_GRACE_MS);
    });
    child.on("close", ended);
  });
}

/** A worker's result lines: JSON objects, bounded in bytes; a torn last line is dropped. */
function readLines(file: string): Record<string, unknown>[] {
  const text = boundedText(file, MAX_RESULT_BYTES);
  if (text === null) return [];
  const out: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    try {
      const v = JSON.parse(line) as unknown;
      if (v && typeof v === "object" && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {}
  }
  return out;
}
