import { diffRecords, formatRange } from "../../checks/record-diff.js";
import { getPath, type ResultRecord, readRecords } from "../../checks/records.js";
import { ExitCode, UsageError } from "../../errors.js";
import { printJson } from "../setup.js";

export async function diffCommand(
  a: string,
  b: string,
  o: {
    key: string;
    metric?: string[];
    records?: string;
    threshold?: string;
    json?: boolean;
    failOnFlag?: boolean;
  },
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
  const base = read(a);
  const head = read(b);
  const key = o.key.split(",").map((k) => k.trim());
  const metrics = o.metric ?? ["median_ms"];
  // A field no record has would key every record as "(missing)" and collapse them into one.
  const all = [...base, ...head];
  for (const [flag, fields] of [
    ["--key", key],
    ["--metric", metrics],
  ] as const) {
    for (const f of fields) {
      if (!all.some((r) => getPath(r, f) !== undefined))
        throw new UsageError(
          `${flag} ${f}: no record in ${a} or ${b} has this field; their records have ${fieldsOf(all)}`,
        );
    }
  }
  const d = diffRecords([base], [head], key, metrics, threshold);
  if (o.failOnFlag && d.flagged > 0) process.exitCode = ExitCode.checkFailed;
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

/** The top-level fields of the records, for a message ("op, mode, B, T, median_ms"). */
function fieldsOf(records: ResultRecord[]): string {
  const names = [...new Set(records.flatMap((r) => Object.keys(r)))];
  return names.length ? names.slice(0, 20).join(", ") : "no fields at all";
}
