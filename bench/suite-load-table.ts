/**
 * RELIABILITY.md's table of the test suite run under CPU load, from scripts/suite-under-load.sh's raw
 * files (bench/results/suite-under-load-*.json).
 */
import { median } from "./measure.js";

/** One scripts/suite-under-load.sh run: several full suites at once beside busy loops. */
export interface SuiteUnderLoad {
  command: string;
  commit: string;
  cores: number;
  hogs: number;
  runs: { rc: number; seconds: number; tests: string | null; failed: string[] }[];
  /** The 1-minute load average, sampled every 30 s. */
  load: number[];
}

/** One row per run of the suite: the batch it was in, its load, its outcome. */
export function suiteUnderLoadTable(batches: SuiteUnderLoad[]): string[] {
  const lines = [
    "| commit | suites at once, beside busy loops | load average (median, highest) | run | outcome | minutes |",
    "|---|---|---:|---:|---|---:|",
  ];
  for (const b of batches) {
    const load = `${median(b.load).toFixed(1)}, ${Math.max(...b.load).toFixed(1)}`;
    b.runs.forEach((r, i) => {
      const outcome =
        r.rc === 0
          ? `passed (${r.tests?.replace(/\s*\|\s*/g, ", ")})`
          : `FAILED (${r.failed.join("; ").replace(/\|/g, "\\|") || `exit ${r.rc}`})`;
      lines.push(
        `| ${b.commit.slice(0, 7)} | ${b.runs.length} on ${b.cores} cores, ${b.hogs} loops | ${load} | ${i + 1} | ${outcome} | ${(r.seconds / 60).toFixed(0)} |`,
      );
    });
  }
  return lines;
}
