import { medianOf } from "../checks/record-diff.js";
import type { RunRecord } from "./run-record.js";

/** What one kernel (one cache entry) costs to compile for a workload, and what that was learnt from. */
export interface EntryCost {
  seconds: number;
  /**
   * `compile-times`: the hook's compile seconds over kernels compiled (`kcache run`);
   * `job-times`: the slope of the job's own seconds over its new entries across drop-in runs (their
   * fixed work cancels out); `job-times-upper-bound`: too few or too alike runs for a slope, so the
   * job's seconds per new entry, which also counts the job's other work.
   */
  from: "compile-times" | "job-times" | "job-times-upper-bound";
}

/** Least-squares slope of y over x; null without two distinct x values. */
function slope(points: [number, number][]): number | null {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const [x, y] of points) {
    sxx += (x - mx) ** 2;
    sxy += (x - mx) * (y - my);
  }
  return sxx > 0 ? sxy / sxx : null;
}

/**
 * One entry's compile cost for a workload's runs: from the hook's compile times where runs measured
 * them, else learnt from drop-in runs (entries new, and the seconds between restore and save).
 */
export function entryCost(runs: RunRecord[]): EntryCost | null {
  const timed = runs.filter((r) => r.kernels.compileSeconds !== null && r.kernels.compiled > 0);
  if (timed.length)
    return {
      seconds: medianOf(timed.map((r) => (r.kernels.compileSeconds as number) / r.kernels.compiled)),
      from: "compile-times",
    };
  const jobs = runs.filter(
    (r): r is RunRecord & { jobSeconds: number } =>
      typeof r.jobSeconds === "number" && Number.isFinite(r.jobSeconds),
  );
  const points = jobs.map((r) => [r.kernels.compiled, r.jobSeconds] as [number, number]);
  const s = points.length >= 3 ? slope(points) : null;
  if (s !== null && s > 0) return { seconds: s, from: "job-times" };
  const compiled = jobs.filter((r) => r.kernels.compiled > 0);
  return compiled.length
    ? {
        seconds: medianOf(compiled.map((r) => r.jobSeconds / r.kernels.compiled)),
        from: "job-times-upper-bound",
      }
    : null;
}

/** Seconds of compiling the runs did not do: the entries they found in the cache, at one entry's cost. */
export function secondsSaved(runs: RunRecord[], cost: EntryCost | null): number | null {
  if (!cost) return null;
  const found = runs.filter((r) => r.hit === "exact" || r.hit === "prefix");
  if (found.some((r) => r.kernels.loaded === null)) return null;
  return found.reduce((n, r) => n + (r.kernels.loaded ?? 0), 0) * cost.seconds;
}
