import type { FaultRow } from "./harness.js";

/** The Markdown table of the rows (also what RELIABILITY.md holds). */
export function render(rows: FaultRow[]): string {
  const lines = [
    "| fault | trials | corrupt restores | writes outside | PR entries in default branch | peak RSS | max wall time | exit codes |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const codes = Object.entries(r.exitCodes)
      .sort()
      .map(([c, n]) => `${c}: ${n}`)
      .join(", ");
    lines.push(
      `| ${r.fault} | ${r.trials} | ${r.corruptRestores} | ${r.writesOutside} | ${r.foreignInDefault} | ${r.peakRssMb === null ? "—" : `${r.peakRssMb.toFixed(0)} MB`} | ${r.maxWallS.toFixed(1)} s | ${codes} |`,
    );
  }
  return lines.join("\n");
}
