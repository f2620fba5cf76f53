import type { CheckSpec } from "../config/profile-schema.js";
import type { CheckResult } from "./check.js";
import { canonical, getPath, identity, readRecords } from "./records.js";

type Spec = Extract<CheckSpec, { type: "threshold" }>;
const OPS = ["<=", ">=", "<", ">"] as const;

/**
 * Compares a field of every record with a bound: absolute, or relative to the matching record of a
 * baseline file (value / baseline value), as in "median_ms <= 1.10 x base".
 */
export function thresholdCheck(
  spec: Spec,
  file: string,
  baselineFile: string | null,
  name: string,
): CheckResult {
  const op = OPS.find((o) => spec[o] !== undefined) as (typeof OPS)[number];
  const bound = spec[op] as number;
  const records = readRecords(file, spec.records);
  const baseline = baselineFile ? readRecords(baselineFile, spec["baseline-records"] ?? spec.records) : null;
  const byKey = new Map((baseline ?? []).map((r) => [identity(r, spec.key ?? []), r]));
  const failures: string[] = [];
  let worst: { id: string; value: number } | null = null;
  for (const r of records) {
    const id = spec.key ? identity(r, spec.key) : `record ${records.indexOf(r)}`;
    const raw = getPath(r, spec.field);
    if (typeof raw !== "number" || !Number.isFinite(raw)) {
      failures.push(`${id}: ${spec.field}=${canonical(raw)} is not a number`);
      continue;
    }
    let value = raw;
    if (baseline) {
      const b = byKey.get(id);
      const bv = b ? getPath(b, spec.field) : undefined;
      if (typeof bv !== "number" || !Number.isFinite(bv) || bv === 0) {
        failures.push(`${id}: no usable ${spec.field} in ${baselineFile}`);
        continue;
      }
      value = raw / bv;
    }
    if (!worst || (op.startsWith("<") ? value > worst.value : value < worst.value)) worst = { id, value };
    const ok =
      op === "<="
        ? value <= bound
        : op === ">="
          ? value >= bound
          : op === "<"
            ? value < bound
            : value > bound;
    if (!ok)
      failures.push(`${id}: ${spec.field}${baseline ? " ratio" : ""} ${round(value)} not ${op} ${bound}`);
  }
  const what = baseline ? `${spec.field} / baseline` : spec.field;
  return {
    name,
    type: "threshold",
    severity: spec.severity,
    passed: failures.length === 0,
    file,
    message: failures.length
      ? `${file}: ${failures.length} of ${records.length} records break ${what} ${op} ${bound}: ${failures.slice(0, 6).join("; ")}`
      : `${what} ${op} ${bound} in all ${records.length} records${worst ? ` (worst ${round(worst.value)} at ${worst.id})` : ""}`,
    details: { failures, worst },
  };
}

function round(v: number): string {
  return Number(v.toPrecision(4)).toString();
}
