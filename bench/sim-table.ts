/**
 * RELIABILITY.md's table of the simulation's long runs (`npm run test:sim -- --out ...`), from their
 * raw files (bench/results/sim-*.json).
 */

/** One long run: the report scripts/sim.mjs's --out writes, with when and where it ran. */
export interface SimReport {
  runs: number;
  steps: number;
  commit?: string;
  date?: string;
  results: {
    seed: number;
    store: string;
    seconds: number;
    runs: number;
    failed: boolean;
    message: string | null;
  }[];
}

/** One row per long run and store: seeds, sequences, steps at most, violations, hours. */
export function simTable(reports: SimReport[]): string[] {
  const lines = [
    "| date | commit | store | seeds | sequences run | steps each, at most | seeds whose sequences violated an invariant | hours |",
    "|---|---|---|---|---:|---:|---:|---:|",
  ];
  for (const r of reports) {
    for (const store of [...new Set(r.results.map((x) => x.store))]) {
      const rows = r.results.filter((x) => x.store === store);
      const seeds = rows.map((x) => x.seed);
      const span = `${Math.min(...seeds)}-${Math.max(...seeds)} (${seeds.length})`;
      const runs = rows.reduce((s, x) => s + x.runs, 0);
      const failed = rows.filter((x) => x.failed).length;
      const hours = rows.reduce((s, x) => s + x.seconds, 0) / 3600;
      lines.push(
        `| ${r.date ?? "?"} | ${(r.commit ?? "?").slice(0, 7)} | ${store} | ${span} | ${runs} | ${r.steps} | ${failed} | ${hours.toFixed(2)} |`,
      );
    }
  }
  return lines;
}
