import type { JobContext } from "../cache/job-context.js";
import { allFetchedAhead, type LazyReport } from "../cache/lazy/job-lookups.js";
import type { JobRecord } from "../cache/local-state.js";
import type { SaveReport } from "../cache/save/save-report.js";
import { type RunOutcome, type RunRecord, runRecord } from "./run-record.js";

type Context = Pick<JobContext, "key" | "prefix" | "revision" | "stack" | "scopes">;

/**
 * The run record of the drop-in path (the action's actions/cache mode, or the CLI's `restore` and
 * `save` around the user's own steps), written by the save: kcache never sees the job's commands
 * there, so the record holds what the restore saw (kept in the local state, `job.restored`) and what
 * the save saw. New kernels (entries with a group file) stand for kernels compiled; the seconds from
 * the restore's start to the save's are the job's own work, from which `kcache stats` learns what one
 * new kernel costs.
 * A job that fails before its save, or whose save fails, leaves no record (`kcache run` records every run).
 */
export function dropInRunRecord(
  ctx: Context,
  job: JobRecord | undefined,
  report: SaveReport,
  lazy: LazyReport | null = null,
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
    // Kernels, not entries (launchers and autotune results are entries too): the restored key's
    // kernels the folder held were found without compiling, restored or already there.
    kernels: {
      status: "not-observed",
      source: "cache-folder",
      loaded: r ? report.kernels.found : null,
      compiled: report.kernels.new,
      compileSeconds: null,
    },
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
