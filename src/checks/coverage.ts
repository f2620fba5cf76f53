import type { CheckSpec } from "../config/profile-schema.js";
import type { CheckResult } from "./check.js";
import { identity, type ResultRecord, readRecords } from "./records.js";

type CoverageSpec = Extract<CheckSpec, { type: "coverage" }>;
type Partial = Record<string, string | number | boolean>;

/** The expected records: the cartesian product of the factors, or the list as given. */
export function expectedRecords(spec: CoverageSpec["expect"]): Partial[] | null {
  if (spec.list) return spec.list;
  if (!spec.product) return null;
  let acc: Partial[] = [{}];
  for (const factor of spec.product) {
    const options: Partial[] = Array.isArray(factor)
      ? factor
      : Object.entries(factor).flatMap(([field, values]) => values.map((v) => ({ [field]: v })));
    acc = acc.flatMap((a) => options.map((o) => ({ ...a, ...o })));
  }
  return acc;
}

/**
 * Every expected record is present exactly `each` times (and the total is `count`, when given);
 * missing and duplicated records are named.
 */
export function coverageCheck(spec: CoverageSpec, file: string, name: string): CheckResult {
  const records = readRecords(file, spec.records);
  const expected = expectedRecords(spec.expect);
  const key = spec.key ?? [...new Set((expected ?? []).flatMap((e) => Object.keys(e)))];
  const problems: string[] = [];
  const details: Record<string, unknown> = { records: records.length };

  if (spec.expect.count !== undefined && records.length !== spec.expect.count) {
    problems.push(`${records.length} records, expected ${spec.expect.count}`);
  }
  const counts = new Map<string, number>();
  for (const r of records) {
    const id = identity(r, key);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  if (expected) {
    const want = new Map<string, number>();
    for (const e of expected) {
      const id = identity(e as ResultRecord, key);
      want.set(id, (want.get(id) ?? 0) + spec.expect.each);
    }
    const missing = [...want]
      .filter(([id, n]) => (counts.get(id) ?? 0) < n)
      .map(([id, n]) => `${id} (${counts.get(id) ?? 0} of ${n})`);
    const duplicated = [...want]
      .filter(([id, n]) => (counts.get(id) ?? 0) > n)
      .map(([id, n]) => `${id} (${counts.get(id)} times, expected ${n})`);
    const unexpected = [...counts.keys()].filter((id) => !want.has(id));
    details.expected = [...want.values()].reduce((a, b) => a + b, 0);
    details.missing = missing;
    details.duplicated = duplicated;
    details.unexpected = unexpected;
    if (missing.length)
      problems.push(`missing ${missing.length}: ${missing.slice(0, 8).join("; ")}${more(missing, 8)}`);
    if (duplicated.length)
      problems.push(`duplicated: ${duplicated.slice(0, 8).join("; ")}${more(duplicated, 8)}`);
  } else if (spec.key) {
    const duplicated = [...counts].filter(([, n]) => n > 1).map(([id, n]) => `${id} (${n} times)`);
    details.duplicated = duplicated;
    if (duplicated.length)
      problems.push(`duplicated: ${duplicated.slice(0, 8).join("; ")}${more(duplicated, 8)}`);
  }
  const expectedTotal = (details.expected as number | undefined) ?? spec.expect.count ?? records.length;
  return {
    name,
    type: "coverage",
    severity: spec.severity,
    passed: problems.length === 0,
    file,
    message: problems.length
      ? `${file}: ${problems.join("; ")}`
      : `${records.length} of ${expectedTotal} expected records, each present ${spec.expect.each === 1 ? "once" : `${spec.expect.each} times`}`,
    details,
  };
}

function more(list: unknown[], shown: number): string {
  return list.length > shown ? `; and ${list.length - shown} more` : "";
}
