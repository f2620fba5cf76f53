import { diffRecords, formatRange } from "../../checks/record-diff.js";
import { readRecords } from "../../checks/records.js";
import { UsageError } from "../../errors.js";
import { printJson } from "../setup.js";

export async function diffCommand(
  a: string,
  b: string,
  o: { key: string; metric?: string[]; records?: string; threshold?: string; json?: boolean },
) {
  const threshold = o.threshold === undefined ? 0.05 : Number(o.threshold);
  if (!(threshold > 0)) throw new UsageError(`--threshold ${o.threshold}: give a share such as 0.05 for 5%`);
  const read = (f: string) => {
    try {
      return readRecords(f, o.records);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  };
  const d = diffRecords([read(a)], [read(b)], o.key.split(","), o.metric ?? ["median_ms"], threshold);
  if (o.json) {
    printJson(d);
    return;
  }
  const lines = [
    `| record | metric | ${a} | ${b} | change |`,
    "|---|---|---:|---:|---:|",
    ...d.rows.map(
      (r) =>
        `| ${r.flagged ? "⚠️ " : ""}${r.id} | ${r.metric} | ${r.base.toPrecision(4)} | ${r.head.toPrecision(4)} | ${r.changePct >= 0 ? "+" : ""}${r.changePct.toFixed(1)}% |`,
    ),
    "",
    ...d.metrics.filter((m) => d.range[m]).map((m) => `${m}: ${formatRange(d.range[m] as [number, number])}`),
    `${d.flagged} changes beyond ${(threshold * 100).toFixed(0)}%.`,
  ];
  if (d.missing.length) lines.push(`Only in ${a} (${d.missing.length}): ${d.missing.join("; ")}`);
  if (d.extra.length) lines.push(`Only in ${b} (${d.extra.length}): ${d.extra.join("; ")}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}
