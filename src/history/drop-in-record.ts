import type { JobContext } from "../cache/job-context.js";
import { allFetchedAhead, type LazyReport } from "../cache/lazy/job-lookups.js";
import type { JobRecord } from "../cache/local-state.js";
import type { SaveReport } from "../cache/save/save-report.js";
import { ENTRIES, type RunOutcome, type RunRecord, runRecord } from "./run-record.js";

type Context = Pick<JobContext, "key" | "prefix" | "revision" | "stack" | "scopes">;

/** What the job's hook counted of its kernels (telemetry/read.ts's KernelStats has these). */
export interface HookKernels {
  status: "available" | "unavailable" | "no-triton";
  loaded: number;
  compiled: number;
  compileSeconds: number;
}

/**
 * The run record of the drop-in path (the action's actions/cache mode, or the CLI's `restore` and
 * `save` around the user's own steps), written by the save: kcache never sees the job's commands
 * there, so the record holds what the restore saw (kept in the local state, `job.restored`) and what
 * the save saw. Kernels are counted as `kcache run` counts them, from the lines the job's hook wrote
 * (the action's restore puts it in for every job): loaded, compiled and compile seconds. Without
 * them (the CLI's restore and save, no hook) the record counts cache entries, and says so
 * (`source: "cache-entries"`): new entries with a group file, and those the folder held; the seconds
 * from the restore's start to the save's are the job's own work, from which `kcache stats` learns
 * what one new entry costs.
 * A job that fails before its save, or whose save fails, leaves no record (`kcache run` records every run).
 */
export function dropInRunRecord(
  ctx: Context,
  job: JobRecord | undefined,
  report: SaveReport,
  lazy: LazyReport | null = null,
  telemetry: HookKernels | null = null,
): RunRecord {
  const savedAt = Date.now() - report.seconds * 1000;
  const r = job?.restored;
  const stage = (kind: "restore" | "save", seconds: number) => ({
    name: kind,
    kind,
    seconds,
    status: "ok" as const,
  });
  const outcome: RunOutcome = {
    profile: "(restore and save)",
    scope: ctx.scopes.write,
    key: ctx.key,
    revision: ctx.revision,
    stackId: ctx.stack.stackId,
    startedAt: new Date(job?.startedAt ?? savedAt).toISOString(),
    seconds: job ? Math.max(0, Date.now() - job.startedAt) / 1000 : report.seconds,
    passed: true,
    firstFailure: null,
    stages: [...(r ? [stage("restore", r.seconds)] : []), stage("save", report.seconds)],
    kernels: kernelsOf(telemetry, r ? report.kernels.found : null, report.kernels.new),
    restore: r
      ? { cacheHit: r.cacheHit, matchedKey: r.matchedKey, entriesRestored: r.entries, bytesRestored: r.bytes }
      : null,
    save: report,
    // A lazy restore that read every pack whole served no lookups, and still says why.
    lazy: r?.readWhole ? { ...(lazy ?? allFetchedAhead(0)), readWhole: r.readWhole } : lazy,
  };
  return {
    ...runRecord(outcome, ctx, undefined, ""),
    via: "save",
    matchedKey: r?.matchedKey ?? null,
    ...(job && r ? { jobSeconds: Math.max(0, (savedAt - job.startedAt) / 1000 - r.seconds) } : {}),
  };
}

/**
 * The hook's kernel lines where it ran in the job; else the entries (with a group file) the folder
 * held, restored or already there, and those the job made: entries, labelled so, never called kernels.
 */
function kernelsOf(t: HookKernels | null, found: number | null, made: number): RunOutcome["kernels"] {
  if (t?.status === "available")
    return {
      status: t.status,
      source: "listener",
      loaded: t.loaded,
      compiled: t.compiled,
      compileSeconds: t.compileSeconds,
    };
  if (t?.status === "unavailable")
    // No listener (Triton < 3.4): as `kcache run` counts, the kernels the folder gained, loads unknown.
    return { status: t.status, source: "cache-folder", loaded: null, compiled: made, compileSeconds: null };
  return { status: "not-observed", source: ENTRIES, loaded: found, compiled: made, compileSeconds: null };
}
