import type { JobContext } from "../cache/job-context.js";
import type { JobRecord } from "../cache/local-state.js";
import type { SaveReport } from "../cache/save-report.js";
import { RUN_RECORD_SCHEMA, type RunRecord } from "./run-record.js";

type Context = Pick<JobContext, "key" | "prefix" | "revision" | "stack" | "scopes">;

/**
 * The run record of the drop-in path (the action's actions/cache mode, or the CLI's `restore` and
 * `save` around the user's own steps), written by the save: kcache never sees the job's commands
 * there, so the record holds what the restore saw (kept in the local state, `job.restored`) and what
 * the save saw. Entries new stand for kernels compiled; the seconds from the restore's start to the
 * save's are the job's own work, from which `kcache stats` learns what one new entry costs.
 * A job that fails before its save, or whose save fails, leaves no record (`kcache run` records every run).
 */
export function dropInRunRecord(ctx: Context, job: JobRecord | undefined, report: SaveReport): RunRecord {
  const seconds = report.seconds;
  const savedAt = Date.now() - seconds * 1000;
  const r = job?.restored;
  return {
    schema: RUN_RECORD_SCHEMA,
    via: "save",
    profile: "(restore and save)",
    prefix: ctx.prefix,
    scope: ctx.scopes.write,
    key: ctx.key,
    revision: ctx.revision,
    stackId: ctx.stack.stackId,
    startedAt: new Date(job?.startedAt ?? savedAt).toISOString(),
    seconds: job ? Math.max(0, Date.now() - job.startedAt) / 1000 : seconds,
    passed: true,
    firstFailure: null,
    hit: r?.hit ?? "none",
    matchedKey: r?.matchedKey ?? null,
    ...(job && r ? { jobSeconds: Math.max(0, (savedAt - job.startedAt) / 1000 - r.seconds) } : {}),
    stages: [],
    // Found without compiling: written from the store or already in the folder as the key has them.
    kernels: {
      status: "not-observed",
      source: "cache-folder",
      loaded: r ? r.entries + r.present : null,
      compiled: report.entriesNew,
      compileSeconds: null,
    },
    restore: r ? { seconds: r.seconds, entries: r.entries, bytes: r.bytes } : null,
    save: { seconds, outcome: report.outcome, bytesUploaded: report.bytesUploaded },
    records: [],
  };
}
