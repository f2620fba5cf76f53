/**
 * The benchmark tables of BENCHMARKS.md, rendered from the raw rows the benchmarks keep in
 * bench/results/ (bench-store.json, bench-s3.json): the same code renders them when measuring and when
 * a test checks that BENCHMARKS.md still says what its raw files say.
 */
import { fmtMB, fmtSeconds } from "./generated-caches.js";
import { median } from "./measure.js";

/** One operation on one cache size, kcache and tar+zstd back to back in each round. */
export interface StoreRow {
  size: string;
  op: string;
  kcache: number[];
  tar: number[];
  kcacheBytes: number;
  tarBytes: number | null;
}

/** The local store vs tar + zstd table. */
export function storeTable(rows: StoreRow[]): string[] {
  return [
    "| cache | operation | kcache median (min–max) | tar+zstd median | kcache / tar+zstd (median of rounds) | kcache bytes written/read | tar+zstd bytes |",
    "|---|---|---|---|---|---|---|",
    ...rows.map((r) => {
      const k = median(r.kcache);
      const t = median(r.tar);
      // The median of per-round ratios: each round ran both back to back.
      const ratio = median(r.kcache.map((k, i) => k / (r.tar[i] as number)));
      return `| ${r.size} | ${r.op} | ${fmtSeconds(k)} (${fmtSeconds(Math.min(...r.kcache))}–${fmtSeconds(Math.max(...r.kcache))}) | ${fmtSeconds(t)} | ${ratio.toFixed(2)}x | ${fmtMB(r.kcacheBytes)} | ${r.tarBytes === null ? "-" : fmtMB(r.tarBytes)} |`;
    }),
  ];
}

export interface Cell {
  times: number[];
  bytes: number;
}
export type S3Row = Record<"kcache-s3" | "kcache-local" | "tar+zstd", Cell>;

/** The S3 store vs local store vs tar + zstd table: `label` and `op` per row. */
export function s3Table(rows: { label: string; op: string; row: S3Row }[]): string[] {
  return [
    "| cache | operation | kcache, S3 store (median) | kcache, local store (median) | tar+zstd, file (median) | S3 bytes moved | tar+zstd bytes |",
    "|---|---|---|---|---|---|---|",
    ...rows.map(({ label, op, row: r }) => {
      const tar = r["tar+zstd"].times.length ? fmtSeconds(median(r["tar+zstd"].times)) : "-";
      return `| ${label} | ${op} | ${fmtSeconds(median(r["kcache-s3"].times))} | ${fmtSeconds(median(r["kcache-local"].times))} | ${tar} | ${fmtMB(r["kcache-s3"].bytes)} | ${r["tar+zstd"].times.length ? fmtMB(r["tar+zstd"].bytes) : "-"} |`;
    }),
  ];
}
