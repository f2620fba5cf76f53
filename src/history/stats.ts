import { type ReadWhole, sumWhole, WHOLE_REASONS } from "../cache/lazy/lazy-plan.js";
import { medianOf } from "../checks/record-diff.js";
import { formatBytes } from "../format.js";
import { countsEntries, type LazyCounts, type RunRecord } from "./run-record.js";
import { type EntryCost, entryCost, secondsSaved } from "./time-saved.js";

export { readRunRecords } from "./run-record.js";

export interface WeekStats {
  prefix: string;
  /** ISO week, e.g. 2026-W49. */
  week: string;
  runs: number;
  passed: number;
  hits: { exact: number; prefix: number; miss: number };
  /** Share of restoring runs that restored something (exact or prefix). */
  hitRate: number | null;
  /** Kernels the runs that counted kernels compiled; null where none did (all counted entries). */
  kernelsCompiled: number | null;
  /** Null where some run counted kernels from the cache folder only (no listener: loads unknown), or none counted kernels. */
  kernelsLoaded: number | null;
  /** Drop-in runs without kcache's hook count cache entries, not kernels: how many, and their entries new and found. */
  entries: { runs: number; new: number; found: number | null } | null;
  /** Median Triton compile seconds of runs that missed, and of runs with an exact hit. */
  compileSecondsCold: number | null;
  compileSecondsWarm: number | null;
  /** Kernels the runs found in the cache x one kernel's compile cost: compiling not done, estimated. */
  secondsSavedEstimate: number | null;
  /** One kernel's compile cost for the prefix, learnt from all its runs chosen (time-saved.ts). */
  entryCost: EntryCost | null;
  restoreSeconds: { p50: number; p90: number } | null;
  saveSeconds: { p50: number; p90: number } | null;
  /** The week's runs with a lazy restore or live sharing, and their counts summed; null when none had. */
  lazy: (LazyCounts & { runs: number }) | null;
}

/** The ISO 8601 week of an instant ("2026-W49"). */
export function isoWeek(iso: string): string {
  const d = new Date(iso);
  const day = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  const dow = day.getUTCDay() || 7;
  day.setUTCDate(day.getUTCDate() + 4 - dow);
  const yearStart = Date.UTC(day.getUTCFullYear(), 0, 1);
  const week = Math.ceil(((day.getTime() - yearStart) / 86400_000 + 1) / 7);
  return `${day.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
}

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

/**
 * The workload a key prefix stands for: an actions/cache key made with `hashFiles(...)` carries a
 * 64-hex-digit digest that changes with every edit of the files hashed, so each edit would start a row
 * of its own; the digest is shown as `<hash>` and the rows of one workload stay one.
 */
export function workloadOf(prefix: string): string {
  return prefix.replace(/[0-9a-f]{64}/g, "<hash>");
}

/** Runs grouped by workload prefix and week, with what the cache did for them. */
export function weeklyStats(records: RunRecord[]): WeekStats[] {
  const costs = new Map<string, EntryCost | null>();
  for (const prefix of new Set(records.map((r) => workloadOf(r.prefix))))
    costs.set(prefix, entryCost(records.filter((r) => workloadOf(r.prefix) === prefix)));
  const groups = new Map<string, RunRecord[]>();
  for (const r of records) {
    const k = `${workloadOf(r.prefix)}\0${isoWeek(r.startedAt)}`;
    const group = groups.get(k);
    if (group) group.push(r);
    else groups.set(k, [r]);
  }
  const out: WeekStats[] = [];
  for (const [k, runs] of groups) {
    const [prefix, week] = k.split("\0") as [string, string];
    const hits = { exact: 0, prefix: 0, miss: 0 };
    for (const r of runs) if (r.hit !== "none") hits[r.hit]++;
    const restoring = hits.exact + hits.prefix + hits.miss;
    const compile = (which: RunRecord["hit"]) =>
      runs
        .filter((r) => r.hit === which && r.kernels.compileSeconds !== null)
        .map((r) => r.kernels.compileSeconds as number);
    const cold = compile("miss");
    const warm = compile("exact");
    const coldMedian = cold.length ? medianOf(cold) : null;
    const warmMedian = warm.length ? medianOf(warm) : null;
    const restores = runs.filter((r) => r.restore).map((r) => r.restore?.seconds as number);
    const saves = runs.filter((r) => r.save).map((r) => r.save?.seconds as number);
    out.push({
      prefix,
      week,
      runs: runs.length,
      passed: runs.filter((r) => r.passed).length,
      hits,
      hitRate: restoring ? (hits.exact + hits.prefix) / restoring : null,
      ...kernelSums(runs),
      compileSecondsCold: coldMedian,
      compileSecondsWarm: warmMedian,
      secondsSavedEstimate: secondsSaved(runs, costs.get(prefix) ?? null),
      entryCost: costs.get(prefix) ?? null,
      restoreSeconds: restores.length
        ? { p50: percentile(restores, 50), p90: percentile(restores, 90) }
        : null,
      saveSeconds: saves.length ? { p50: percentile(saves, 50), p90: percentile(saves, 90) } : null,
      lazy: lazySums(runs),
    });
  }
  return out.sort((a, b) =>
    a.prefix === b.prefix ? (a.week < b.week ? 1 : -1) : a.prefix < b.prefix ? -1 : 1,
  );
}

/** The columns of a week's lazy and live counts, as `kcache stats` prints them and its page shows them. */
export const LAZY_COLUMNS = [
  "prefix",
  "week",
  "lazy or live runs",
  "entries fetched ahead",
  "on demand",
  "live",
  "never needed",
  "bytes read by lookups",
  "lookups waited s",
  "read whole: no frames",
  "read whole: mostly used",
] as const;

/** A week's lazy and live counts in LAZY_COLUMNS' order; null for a week without them. */
export function lazyCells(w: WeekStats): string[] | null {
  const l = w.lazy;
  if (!l) return null;
  return [
    w.prefix,
    w.week,
    String(l.runs),
    String(l.prefetched),
    String(l.onDemand),
    String(l.live),
    String(l.neverFetched),
    formatBytes(l.bytesRead),
    l.waitSeconds.toFixed(2),
    ...WHOLE_REASONS.map((reason) => {
      const t = l.readWhole?.[reason];
      return t ? `${formatBytes(t.bytes)} (${t.packs} packs)` : "-";
    }),
  ];
}

/** Kernels of the runs that counted kernels, and apart, entries of those that counted entries. */
function kernelSums(runs: RunRecord[]): Pick<WeekStats, "kernelsCompiled" | "kernelsLoaded" | "entries"> {
  const sum = (rs: RunRecord[], f: "compiled" | "loaded") =>
    rs.some((r) => r.kernels[f] === null) ? null : rs.reduce((n, r) => n + (r.kernels[f] ?? 0), 0);
  const kernels = runs.filter((r) => !countsEntries(r));
  const entries = runs.filter(countsEntries);
  return {
    kernelsCompiled: kernels.length ? sum(kernels, "compiled") : null,
    kernelsLoaded: kernels.length ? sum(kernels, "loaded") : null,
    entries: entries.length
      ? { runs: entries.length, new: sum(entries, "compiled") ?? 0, found: sum(entries, "loaded") }
      : null,
  };
}

/** The lazy and live counts of the runs that had them, summed. */
function lazySums(runs: RunRecord[]): WeekStats["lazy"] {
  const lazy = runs.flatMap((r) => (r.lazy ? [r.lazy] : []));
  if (!lazy.length) return null;
  const sum = (f: Exclude<keyof LazyCounts, "readWhole">) => lazy.reduce((n, l) => n + l[f], 0);
  return {
    runs: lazy.length,
    prefetched: sum("prefetched"),
    onDemand: sum("onDemand"),
    live: sum("live"),
    neverFetched: sum("neverFetched"),
    bytesRead: sum("bytesRead"),
    waitSeconds: sum("waitSeconds"),
    readWhole: lazy.reduce<ReadWhole>((all, l) => sumWhole(all, l.readWhole), {}),
  };
}
