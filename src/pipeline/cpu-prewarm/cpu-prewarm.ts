import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { JobContext } from "../../cache/job-context.js";
import { restoredContext } from "../../cache/local-state.js";
import { type Prewarmed, recordedPlan } from "../../cache/plan/plan.js";
import { restore } from "../../cache/restore/restore.js";
import { save } from "../../cache/save/save.js";
import type { Job } from "../../job/build-job.js";
import { isTrustedScope } from "../../keys/scope.js";
import { mayHoldKernels } from "../../kinds/registry.js";
import { readTelemetry } from "../../telemetry/read.js";
import { checkoutRoot } from "./checkout.js";
import { type EntryOutcome, runWorkers, type WorkersReport } from "./compile-workers.js";
import type { GpuBase } from "./gpu-base.js";
import { findGpuBase } from "./gpu-base.js";

export interface CpuPrewarmReport {
  /**
   * refused: a trusted scope; no-plan: no key of the GPU job's stack with a plan; plan-refused: the
   * newest one's plan was damaged or named a file outside the checkout; ran: workers ran.
   */
  outcome: "refused" | "no-plan" | "plan-refused" | "ran";
  message: string;
  /** The key it built on (the GPU job's), and the key it saved (the pull request's, on the GPU job's stack). */
  base: string | null;
  key: string | null;
  plan: number;
  /** Entries by what became of them: unchanged, compiled, cached, missing, failed. */
  counts: Record<EntryOutcome["outcome"], number>;
  /** Unchanged kernels whose key this machine computes as the GPU job did (all of them, or the stacks differ). */
  sameKey: { same: number; other: number };
  /** Changed kernels left to the GPU job, each with why. */
  left: { name: string; why: string }[];
  touchedCuda: boolean;
  /** The workers that touched CUDA, and how (empty when none did). */
  cuda: string[];
  saved: string | null;
  seconds: { restore: number; compile: number; save: number; total: number };
}

const emptyCounts = (): CpuPrewarmReport["counts"] => ({
  unchanged: 0,
  compiled: 0,
  cached: 0,
  missing: 0,
  failed: 0,
});

/**
 * `kcache prewarm --cpu` (docs/cpu-prewarm.md): on a machine with the job's Python stack and no GPU, at
 * a pull request's revision, restores the GPU job's newest key (its stack but for the accelerator),
 * compiles the kernels of its plan whose function changed, and saves into the pull request's own scope
 * under the key its GPU job restores. Never into a trusted scope: what a pull request compiled stays its own.
 */
export interface CpuPrewarmOptions {
  ctx: JobContext;
  cwd: string;
  python: string;
  env: NodeJS.ProcessEnv;
  workers: number;
  timeoutMs: number;
}

/** The CPU prewarm of a job (the CLI's and the action's): its checkout, its Python, the profile's environment. */
export function cpuPrewarmOf(
  job: Job,
  run: { workers: number; timeoutMs: number },
): Promise<CpuPrewarmReport> {
  return cpuPrewarm({
    ctx: job.ctx,
    cwd: job.cwd,
    python: job.config.stack.python,
    env: { ...job.env, ...(job.profile?.spec.env ?? {}) },
    ...run,
  });
}

export async function cpuPrewarm(opts: CpuPrewarmOptions): Promise<CpuPrewarmReport> {
  const t0 = performance.now();
  const { ctx } = opts;
  const report = emptyReport();
  const finish = (outcome: CpuPrewarmReport["outcome"], message: string) => {
    Object.assign(report, { outcome, message });
    report.seconds.total = (performance.now() - t0) / 1000;
    if (outcome === "plan-refused") ctx.log.warn(message);
    else ctx.log.info(message);
    return report;
  };
  if (isTrustedScope(ctx.scopes.write))
    return finish(
      "refused",
      `a CPU prewarm saves only into a pull request's own scope; this run writes ${ctx.scopes.write} (on the default branch the GPU job compiles and saves): nothing compiled`,
    );
  const found = await findGpuBase(ctx);
  if ("none" in found && found.refused) return finish("plan-refused", found.refused);
  if ("none" in found)
    return finish(
      "no-plan",
      `no key of ${ctx.prefix} on this stack (but for the accelerator) holds a compile plan in ${ctx.scopes.read.join(", ")}${found.none.length ? `: ${found.none.slice(0, 3).join("; ")}` : ""}; run the GPU job once on the default branch with kcache's hook in: nothing compiled`,
    );
  Object.assign(report, { base: found.match.key, key: found.ctx.key, plan: found.plan.entries.length });
  const r0 = performance.now();
  const work = restoredContext(found.ctx, await restore(found.ctx));
  report.seconds.restore = (performance.now() - r0) / 1000;
  const triton = work.caches.find(mayHoldKernels) ?? work.caches[0];
  if (!triton) return finish("no-plan", "no cache folder is configured: nothing compiled");
  const root = checkoutRoot(opts.cwd);
  const c0 = performance.now();
  const { workers, lines } = await compileChanged(opts, found, root, triton.path);
  report.seconds.compile = (performance.now() - c0) / 1000;
  const compiled = tally(ctx, report, workers, found);
  const s0 = performance.now();
  const plan = recordedPlan(lines.plan, [], root);
  plan.device = found.plan.device;
  const prewarmed: Prewarmed = {
    revision: ctx.revision,
    at: new Date().toISOString(),
    base: found.match.key,
    compiled,
    failed: report.left.slice(0, 1000),
    unchanged: report.counts.unchanged,
  };
  const saved = await save(work, {
    evict: { never: "a CPU prewarm compiles only what changed; it proves nothing about use" },
    hook: { complete: false, dirs: [], wrote: lines.wrote, written: lines.written, plan },
    prewarmed,
  });
  report.seconds.save = (performance.now() - s0) / 1000;
  report.saved = saved.outcome === "saved" || saved.outcome === "nothing-new" ? found.ctx.key : null;
  const c = report.counts;
  return finish(
    "ran",
    `CPU prewarm of ${found.ctx.key} on ${found.match.key}'s plan (${report.plan} kernels): ${c.compiled} compiled, ${c.cached} already cached, ${c.unchanged} unchanged, ${c.missing + c.failed + workers.broken.length} left to the GPU job; save: ${saved.outcome}`,
  );
}

function emptyReport(): CpuPrewarmReport {
  return {
    outcome: "refused",
    message: "",
    base: null,
    key: null,
    plan: 0,
    counts: emptyCounts(),
    sameKey: { same: 0, other: 0 },
    left: [],
    touchedCuda: false,
    cuda: [],
    saved: null,
    seconds: { restore: 0, compile: 0, save: 0, total: 0 },
  };
}

/** Runs the workers over the plan into the cache folder; what their hook recorded comes back with them. */
async function compileChanged(opts: CpuPrewarmOptions, found: GpuBase, root: string, cacheDir: string) {
  // A folder of this run's own (a pid is reused: a stale telemetry file would be read as this run's),
  // removed once the workers' results and telemetry are read: a CPU runner's /tmp does not fill up.
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-cpu-prewarm-"));
  // The workers' hook recorded what they wrote (attribution) and the plan of what they compiled.
  const lines = {
    plan: [] as unknown[],
    written: [] as ReturnType<typeof readTelemetry>["wroteFiles"],
    wrote: [] as string[],
  };
  try {
    const workers: WorkersReport = await runWorkers({
      python: opts.python,
      root,
      entries: found.plan.entries,
      device: found.plan.device,
      workers: opts.workers,
      env: { ...opts.env, TRITON_CACHE_DIR: cacheDir },
      tmp,
      timeoutMs: opts.timeoutMs,
    });
    for (const f of workers.telemetry) {
      const t = readTelemetry(f);
      lines.plan.push(...t.plan);
      lines.written.push(...t.wroteFiles);
      lines.wrote.push(...t.wroteFolders);
    }
    return { workers, lines };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Counts what became of each entry into the report, logs what was left; the keys compiled ahead. */
function tally(ctx: JobContext, report: CpuPrewarmReport, workers: WorkersReport, found: GpuBase): string[] {
  report.touchedCuda = workers.touchedCuda;
  report.cuda = workers.cuda;
  for (const c of workers.cuda)
    if (workers.touchedCuda) ctx.log.warn(`CUDA in a compile worker: ${c}`);
    else ctx.log.info(`CUDA in a compile worker: ${c}`);
  const compiled: string[] = [];
  for (const o of workers.outcomes) {
    report.counts[o.outcome]++;
    const e = found.plan.entries[o.i];
    const name = e ? `${e.module}.${e.qualname} (${e.file})` : `entry ${o.i}`;
    if (o.outcome === "unchanged") {
      if (o.sameKey === true) report.sameKey.same++;
      else report.sameKey.other++;
    } else if ((o.outcome === "compiled" || o.outcome === "cached") && o.hash) compiled.push(o.hash);
    else if (o.outcome === "failed" || o.outcome === "missing")
      report.left.push({ name, why: (o.why ?? "").slice(0, 1000) });
  }
  // A worker that ended early (killed at the timeout, crashed) said nothing of the entries dealt to it:
  // each is named as left, so the GPU job's report counts it as the prewarm's, not as "not in the plan".
  const told = new Set(workers.outcomes.map((o) => o.i));
  found.plan.entries.forEach((e, i) => {
    if (told.has(i)) return;
    report.counts.failed++;
    report.left.push({
      name: `${e.module}.${e.qualname} (${e.file})`,
      why: `its compile worker did not finish (${workers.broken[0] ?? "no outcome written"})`.slice(0, 1000),
    });
  });
  for (const b of workers.broken) report.left.push({ name: "a compile worker", why: b });
  for (const l of report.left.slice(0, 10)) ctx.log.warn(`left to the GPU job: ${l.name}: ${l.why}`);
  if (report.sameKey.other > 0)
    ctx.log.warn(
      `${report.sameKey.other} unchanged kernels get another key on this machine than on the GPU job's: its Triton, options or environment differ, and what it compiles may not load there`,
    );
  return compiled;
}
