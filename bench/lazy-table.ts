import { fmtMB, fmtSeconds } from "./generated-caches.js";
import { median } from "./measure.js";

/** One key of bench/run-lazy-bench.ts (bench/results/bench-lazy.json). */
export interface LazyRow {
  key: string;
  entries: number;
  /** Entries the key's last save recorded as used (what a lazy restore fetches ahead). */
  used: number;
  /** Entries a lazy restore left in the store. */
  deferred: number;
  /** Uncompressed bytes of the used entries, and the compressed bytes of their frames. */
  usedBytes: number;
  usedFrameBytes: number;
  eager: { seconds: number[]; bytesRead: number };
  lazy: { seconds: number[]; bytesRead: number };
  tar: { seconds: number[]; bytesRead: number };
  lazyOverEager: number;
  lazyOverTar: number;
  /** One lookup of an entry left in the store, through the hook's socket (local store). */
  lookupMs: { median: number; p90: number; n: number };
}

/** The lazy-vs-eager table: restore wall and bytes read, against tar + zstd, and a lookup's cost. */
export function lazyTable(rows: LazyRow[]): string[] {
  return [
    "| key | restore: eager | restore: lazy | tar + zstd (whole folder) | lazy / eager | lazy / tar | bytes read: eager | lazy | the used entries' frames | lazy / used | lookup of an entry left in the store (median, p90) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.key} | ${fmtSeconds(median(r.eager.seconds))} | ${fmtSeconds(median(r.lazy.seconds))} | ${fmtSeconds(median(r.tar.seconds))} | ${r.lazyOverEager.toFixed(2)}x | ${r.lazyOverTar.toFixed(2)}x | ${fmtMB(r.eager.bytesRead)} | ${fmtMB(r.lazy.bytesRead)} | ${fmtMB(r.usedFrameBytes)} | ${(r.lazy.bytesRead / r.usedFrameBytes).toFixed(2)}x | ${r.lookupMs.median.toFixed(1)} ms, ${r.lookupMs.p90.toFixed(1)} ms |`,
    ),
  ];
}

/** One job of bench/gpu/lazy-on-device.sh (bench/results/gpu-lazy-2026-12-03.json). */
export interface GpuLazyRow {
  label: string;
  wall: number;
  restore: number;
  compiled: number;
  loaded: number;
  entriesRestored: number;
  bytesDownloaded: number;
  restoreLazy: { prefetched: number; deferred: number } | null;
  lazy: { onDemand: number; bytesRead: number; waitSeconds: number; neverFetched: number } | null;
}

/** FLA's chunk_kda on the H200: each job's restore, bytes read, entries fetched ahead and on demand, kernels compiled. */
export function gpuLazyTable(raw: { rows: GpuLazyRow[] }): string[] {
  return [
    "| job | wall | restore | read by the restore | read by lookups | entries placed before the job | fetched on demand | never needed | kernels compiled | loaded |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...raw.rows.map(
      (r) =>
        `| ${r.label} | ${r.wall.toFixed(1)} s | ${r.restore.toFixed(2)} s | ${fmtMB(r.bytesDownloaded)} | ${r.lazy ? fmtMB(r.lazy.bytesRead) : "-"} | ${r.entriesRestored} | ${r.lazy ? r.lazy.onDemand : "-"} | ${r.lazy ? r.lazy.neverFetched : "-"} | ${r.compiled} | ${r.loaded} |`,
    ),
  ];
}

/** One runner of bench/gpu/action-lazy-on-device.sh: its steps' seconds and what its job compiled. */
interface GpuActionLazyRun {
  runner: string;
  restore_s: number;
  job_s: number;
  post_s: number;
  counts: { compiled: number; loaded: number };
}

/** The table of the action's lazy restore on the GPU (bench/results/gpu-action-lazy-*.json). */
export function gpuActionLazyTable(raw: {
  runs: Record<string, GpuActionLazyRun>;
  lazy_line_b: string;
}): string[] {
  const what: Record<string, string> = {
    "runner-a": "A: a miss, the job compiles, the post step saves",
    "runner-idle": "idle: restores and saves, runs no kernel",
    "runner-b": "B: restores lazily, the job's lookups served until the post step",
  };
  return [
    "| runner | restore step | job | post step (stops the server, saves) | kernels compiled | loaded from cache |",
    "|---|---:|---:|---:|---:|---:|",
    ...Object.values(raw.runs).map(
      (r) =>
        `| ${what[r.runner] ?? r.runner} | ${r.restore_s.toFixed(2)} s | ${r.job_s.toFixed(2)} s | ${r.post_s.toFixed(2)} s | ${r.counts.compiled} | ${r.counts.loaded} |`,
    ),
    "",
    `B's post step: \`${raw.lazy_line_b}\`.`,
  ];
}
