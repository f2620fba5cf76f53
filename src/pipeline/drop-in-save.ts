import type { Fault } from "../cache/faults.js";
import type { JobContext } from "../cache/job-context.js";
import type { LazyReport } from "../cache/lazy/job-lookups.js";
import { type LocalState, readState } from "../cache/local-state.js";
import { recordedPlan } from "../cache/plan/plan.js";
import { type HookUsage, type SaveOptions, save } from "../cache/save/save.js";
import type { SaveReport } from "../cache/save/save-report.js";
import { tolerateCacheFailure } from "../cache/tolerate.js";
import { dropInRunRecord } from "../history/drop-in-record.js";
import { writeRunRecord } from "../history/run-record.js";
import { readOnlyLine } from "../store/read-only.js";
import { type KernelStats, readTelemetry } from "../telemetry/read.js";
import { checkoutRoot } from "./cpu-prewarm/checkout.js";

/**
 * The save of the drop-in path (`kcache save`, the action's save and post steps): the save, then a
 * run record of the job for `kcache stats`, with what this job's restore left in the local state.
 * A store that fails the save warns once and the job goes on (--strict: the save's rules); no record
 * is written then. A record the store refuses is one warning, and the job goes on. `state` is the
 * local state as the caller read it (once per command: the end of the job reads the same); `lazy`,
 * what the job's lookups came to when the restore step served them (github/action-lookups.ts).
 * Unless the caller says what the hook saw, the save is given what the job's hook recorded in the
 * telemetry file its restore named (jobHookUsage), as `kcache run` gives its commands' record.
 */
export async function dropInSave(
  ctx: JobContext,
  opts: SaveOptions = {},
  faults: Fault[] = [],
  state: LocalState | null = readState(ctx.stateFile),
  lazy: LazyReport | null = null,
): Promise<SaveReport | null> {
  // A read-only job (declared, or its store forbade a write) says so once and saves nothing (the action's save step).
  if (ctx.readOnly.why !== null) {
    ctx.log.info(readOnlyLine(ctx.readOnly.why));
    return null;
  }
  const job = state?.primaryKey === ctx.key ? state.job : undefined;
  const telemetry = jobTelemetry(ctx, state);
  const withHook: SaveOptions = opts.hook ? opts : { ...opts, hook: hookUsageOf(telemetry) };
  const report = await tolerateCacheFailure(
    "save",
    ctx.strict,
    ctx.log,
    () => save(ctx, withHook, state),
    faults,
  );
  // A store that failed the save has had its one warning: no second try (and wait) for the record.
  if (report) await writeRunRecord(dropInRunRecord(ctx, job, report, lazy, telemetry), ctx);
  return report;
}

/**
 * What kcache's hook recorded in the job's telemetry file (the action's restore step puts the hook
 * on the job's PYTHONPATH and names the file the restore made in KCACHE_TELEMETRY_FILE): the entry
 * folders its processes' lookups found and wrote, each file written with its digest, and the kernels
 * of the autotune results they tuned. Undefined where this key's restore named no file or nothing
 * with the hook in wrote to it.
 */
export function jobHookUsage(ctx: Pick<JobContext, "key">, state: LocalState | null): HookUsage | undefined {
  return hookUsageOf(jobTelemetry(ctx, state));
}

/**
 * The job's telemetry file as its hook left it, null where this key's restore named none. Kernel
 * lines written before the restore began are not counted: the file may hold earlier steps' lines.
 */
function jobTelemetry(ctx: Pick<JobContext, "key">, state: LocalState | null): KernelStats | null {
  const job = state?.primaryKey === ctx.key ? state.job : undefined;
  const file = job?.attribution?.telemetry;
  if (typeof file !== "string") return null;
  return readTelemetry(file, typeof job?.startedAt === "number" ? job.startedAt / 1000 : null);
}

function hookUsageOf(t: KernelStats | null): HookUsage | undefined {
  if (!t) return undefined;
  if (t.status === "no-triton" && t.wroteFiles.length === 0 && t.usedFolders.length === 0) return undefined;
  return {
    complete: t.usageComplete,
    dirs: t.usedFolders,
    wrote: t.wroteFolders,
    written: t.wroteFiles,
    tuned: t.autotune
      .filter((a) => !a.hit)
      .map((a) => ({ folder: a.folder, modules: t.autotuneModules[a.kernel] ?? [] })),
    // The action's steps and the CLI's save run in the job's checkout, the folder the plan is relative to.
    plan: t.plan.length ? recordedPlan(t.plan, t.devices, checkoutRoot(process.cwd())) : undefined,
  };
}
