import { getPath, identity, type ResultRecord } from "./records.js";

/** One metric of one record in two runs (or two sets of runs). */
export interface RecordChange {
  id: string;
  metric: string;
  base: number;
  head: number;
  /** (head - base) / base, in percent. */
  changePct: number;
  flagged: boolean;
  /**
   * Where rounds disagree: the smallest and largest change of a single head round against the base
   * median, in percent (present when the head has more than one round).
   */
  spreadPct?: [number, number];
}

export interface RecordDiff {
  key: string[];
  metrics: string[];
  /** A change beyond this fraction (0.05 = 5%) is flagged. */
  threshold: number;
  rows: RecordChange[];
  /** Records only in the base, and only in the head. */
  missing: string[];
  extra: string[];
  /** Per metric, the smallest and largest change in percent. */
  range: Record<string, [number, number]>;
  flagged: number;
}

/** Median of the values; the mean of the middle two for an even count. */
export function medianOf(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/**
 * Compares records matched on key fields, metric by metric. Each side may hold several runs of the
 * same records (rounds); their medians are compared.
 */
export function diffRecords(
  base: ResultRecord[][],
  head: ResultRecord[][],
  key: string[],
  metrics: string[],
  threshold: number,
): RecordDiff {
  const collect = (runs: ResultRecord[][]) => {
    const byId = new Map<string, Map<string, number[]>>();
    for (const records of runs) {
      for (const r of records) {
        const id = identity(r, key);
        const m = byId.get(id) ?? new Map<string, number[]>();
        for (const metric of metrics) {
          const v = getPath(r, metric);
          if (typeof v === "number" && Number.isFinite(v)) m.set(metric, [...(m.get(metric) ?? []), v]);
        }
        byId.set(id, m);
      }
    }
    return byId;
  };
  const a = collect(base);
  const b = collect(head);
  const rows: RecordChange[] = [];
  for (const [id, am] of a) {
    const bm = b.get(id);
    if (!bm) continue;
    for (const metric of metrics) {
      const av = am.get(metric);
      const bv = bm.get(metric);
      if (!av?.length || !bv?.length) continue;
      const baseV = medianOf(av);
      const headV = medianOf(bv);
      const changePct = baseV === 0 ? 0 : ((headV - baseV) / baseV) * 100;
      // A hair of tolerance: 1.9 vs 2.0 is -5% exactly, not -5.0000000001%.
      const pct = (v: number) => (baseV === 0 ? 0 : ((v - baseV) / baseV) * 100);
      rows.push({
        id,
        metric,
        base: baseV,
        head: headV,
        changePct,
        flagged: Math.abs(changePct) > threshold * 100 + 1e-9,
        ...(bv.length > 1
          ? { spreadPct: [pct(Math.min(...bv)), pct(Math.max(...bv))] as [number, number] }
          : {}),
      });
    }
  }
  const range: Record<string, [number, number]> = {};
  for (const metric of metrics) {
    const changes = rows.filter((r) => r.metric === metric).map((r) => r.changePct);
    if (changes.length) range[metric] = [Math.min(...changes), Math.max(...changes)];
  }
  return {
    key,
    metrics,
    threshold,
    rows,
    missing: [...a.keys()].filter((id) => !b.has(id)),
    extra: [...b.keys()].filter((id) => !a.has(id)),
    range,
    flagged: rows.filter((r) => r.flagged).length,
  };
}

/** "-1.8% .. +2.6%" */
export function formatRange([lo, hi]: [number, number]): string {
  const f = (v: number) => `${v >= 0 ? "+" : ""}${v.toFixed(1)}%`;
  return `${f(lo)} .. ${f(hi)}`;
}
