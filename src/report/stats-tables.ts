import type { WorkingSet } from "../cache/usage/working-set.js";
import { formatBytes } from "../format.js";
import type { WeekStats } from "../history/stats.js";
import type { PrefixWorkingSet } from "../history/working-sets.js";

/**
 * The tables and lines `kcache stats` shows, as cells and text, so its text output and its page
 * (stats-html.ts) show the same figures under the same names.
 */

/** The weekly table's columns, in weekCells' order. */
export const WEEK_COLUMNS = [
  "prefix",
  "week",
  "runs",
  "passed",
  "exact / prefix / miss",
  "hit rate",
  "kernels compiled",
  "loaded",
  "compile s cold / warm",
  "saved s (est.)",
  "restore s p50 / p90",
  "save s p50 / p90",
  "no hook: runs, entries new / found",
] as const;

const fixed = (v: number | null | undefined, d = 1) => (v === null || v === undefined ? "-" : v.toFixed(d));

/** A week in WEEK_COLUMNS' order. Runs without kcache's hook counted entries, shown apart, never as kernels. */
export function weekCells(w: WeekStats): string[] {
  const e = w.entries;
  return [
    w.prefix,
    w.week,
    String(w.runs),
    String(w.passed),
    `${w.hits.exact} / ${w.hits.prefix} / ${w.hits.miss}`,
    w.hitRate === null ? "-" : `${Math.round(w.hitRate * 100)}%`,
    w.kernelsCompiled === null ? "-" : String(w.kernelsCompiled),
    w.kernelsCompiled === null ? "-" : (w.kernelsLoaded?.toString() ?? "?"),
    `${fixed(w.compileSecondsCold)} / ${fixed(w.compileSecondsWarm)}`,
    fixed(w.secondsSavedEstimate, 0),
    `${fixed(w.restoreSeconds?.p50, 2)} / ${fixed(w.restoreSeconds?.p90, 2)}`,
    `${fixed(w.saveSeconds?.p50, 2)} / ${fixed(w.saveSeconds?.p90, 2)}`,
    e ? `${e.runs}: ${e.new} / ${e.found ?? "?"}` : "-",
  ];
}

const LEARNT = {
  "compile-times": "from the hook's compile times",
  "job-times": "learnt from the jobs' seconds over their new entries (no hook: entries, not kernels)",
  "job-times-upper-bound": "at most: the jobs' seconds per new entry (no hook), too few runs for more",
} as const;

/** Per prefix, the one line saying what the saved seconds are estimated with. */
export function estimateLines(weeks: WeekStats[]): string[] {
  const costs = new Map(weeks.flatMap((w) => (w.entryCost ? [[w.prefix, w.entryCost] as const] : [])));
  return [...costs].map(([prefix, c]) => {
    const unit = c.from === "compile-times" ? "kernel" : "entry";
    return `${prefix}: one ${unit} ≈ ${c.seconds.toFixed(2)} s (${LEARNT[c.from]}); saved s (est.) = ${unit === "kernel" ? "kernels" : "entries"} found in the cache x that`;
  });
}

/** The working-set table's columns, in workingSetCells' order. */
export const WORKING_SET_COLUMNS = [
  "prefix",
  "newest key",
  "used at its save",
  "carried unused",
  "unused share",
  "trend",
] as const;

/** The line above the working-set table. */
export function workingSetCaption(scope: string): string {
  return `working sets of ${scope}'s newest keys (a restore downloads both columns; eviction drops the unused ones):`;
}

/** One prefix's working set in WORKING_SET_COLUMNS' order. */
export function workingSetCells(s: PrefixWorkingSet): string[] {
  const share = (w: WorkingSet) =>
    w.live.bytes + w.unused.bytes > 0
      ? `${Math.round((w.unused.bytes / (w.live.bytes + w.unused.bytes)) * 100)}%`
      : "-";
  const n = s.newest;
  const trend = s.earlier
    ? `${s.saves} saves before: ${formatBytes(s.earlier.live.bytes)} used, ${formatBytes(s.earlier.unused.bytes)} unused`
    : "-";
  return [
    s.prefix,
    n.key,
    `${n.live.entries} entries, ${formatBytes(n.live.bytes)}`,
    `${n.unused.entries} entries, ${formatBytes(n.unused.bytes)}`,
    share(n),
    trend,
  ];
}
