import fs from "node:fs";
import path from "node:path";
import type { JobContext } from "../cache/job-context.js";
import { medianOf } from "../checks/record-diff.js";
import { getPath, identity, readRecords } from "../checks/records.js";
import type { CheckSpec } from "../config/profile-schema.js";
import { defaultBranchScope } from "../keys/scope.js";
import { runListPrefix } from "../store/layout.js";
import { type HistoryRows, type RunRecord, readRunRecords } from "./run-record.js";

type Threshold = Extract<CheckSpec, { type: "threshold" }>;

/** A threshold check whose baseline is the default branch's history. */
export function isHistoryCheck(spec: CheckSpec): spec is Threshold {
  return spec.type === "threshold" && spec.baseline === "history";
}

export interface HistoryBaseline {
  /** A result file of the medians (key fields and the check's field), for the threshold check; null when there is no history yet. */
  file: string | null;
  /** The runs the medians come from ("a1b2c3d4e5f6 2026-12-01"), newest first. */
  runs: string[];
}

/**
 * The baseline of a `baseline: history` check: per record, the median of the field over the default
 * branch's newest passing runs of this prefix, profile and stack (pull requests' runs never count).
 * Written as a result file in `outDir` so the threshold check compares record by record.
 */
export async function historyBaseline(
  spec: Threshold,
  name: string,
  ctx: JobContext,
  profile: string,
  outDir: string,
): Promise<HistoryBaseline> {
  const scope = defaultBranchScope(ctx.scopes.defaultBranch);
  let runs: RunRecord[] = [];
  try {
    runs = (await readRunRecords(ctx.store, runListPrefix(scope, ctx.prefix))).records.filter(
      (r) => r.passed && r.profile === profile && r.stackId === ctx.stack.stackId && r.history?.[name],
    );
  } catch (e) {
    ctx.log.warn(`check ${name}: the history of ${scope} could not be read (${(e as Error).message})`);
  }
  runs = runs.slice(0, spec["history-runs"]);
  if (runs.length === 0) return { file: null, runs: [] };
  const values = new Map<string, { key: Record<string, unknown>; values: number[] }>();
  for (const r of runs)
    for (const row of r.history?.[name]?.rows ?? []) {
      const id = identity(row.key, spec.key ?? []);
      const v = values.get(id) ?? { key: row.key, values: [] };
      v.values.push(row.value);
      values.set(id, v);
    }
  const file = path.join(outDir, `baseline-${name.replace(/[^A-Za-z0-9_.-]+/g, "_")}.json`);
  const results = [...values.values()].map((v) => ({ ...v.key, [spec.field]: medianOf(v.values) }));
  fs.writeFileSync(file, JSON.stringify({ results }));
  return { file, runs: runs.map((r) => `${r.revision.slice(0, 12)} ${r.startedAt.slice(0, 10)}`) };
}

/** What this run's history check read, for its run record: later runs compare with it. */
export function historyRows(spec: Threshold, file: string): HistoryRows {
  const key = spec.key ?? [];
  const rows = readRecords(file, spec.records).flatMap((r) => {
    const v = getPath(r, spec.field);
    return typeof v === "number" && Number.isFinite(v)
      ? [{ key: Object.fromEntries(key.map((k) => [k, getPath(r, k)])), value: v }]
      : [];
  });
  return { key, field: spec.field, rows };
}
