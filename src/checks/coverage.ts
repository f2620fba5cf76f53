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
 * Every expected record is present exactly `each` times (and the total is `count`, when given).
 * An expected record names some fields (op and mode, say): a result matches it when it agrees on
 * those. With `key`, two results with the same key fields are duplicates whatever was expected.
 * Missing and duplicated records are named.
 */
export function coverageCheck(spec: CoverageSpec, file: string, name: string): CheckResult {
  const records = readRecords(file, spec.records);
  const expected = expectedRecords(spec.expect);
  const problems: string[] = [];
  const details: Record<string, unknown> = { records: records.length };

  if (spec.expect.count !== undefined && records.length !== spec.expect.count) {
    problems.push(`${records.length} records, expected ${spec.expect.count}`);
  }
  const missing: string[] = [];
  const duplicated: string[] = [];
  if (expected) {
    const matched = new Set<ResultRecord>();
    for (const e of expected) {
      // Name the fields in key order, as people read the key.
      const named = Object.keys(e);
      const fields = [
        ...(spec.key ?? []).filter((k) => named.includes(k)),
        ...named.filter((k) => !spec.key?.includes(k)),
      ];
      const want = identity(e as ResultRecord, fields);
      const hits = records.filter((r) => identity(r, fields) === want);
      for (const h of hits) matched.add(h);
      // Copies of one keyed record are reported once, as duplicates, below.
      const n = spec.key ? new Set(hits.map((h) => identity(h, spec.key as string[]))).size : hits.length;
      if (n < spec.expect.each) missing.push(`${want} (${n} of ${spec.expect.each})`);
      if (n > spec.expect.each) duplicated.push(`${want} (${n} times, expected ${spec.expect.each})`);
    }
    details.expected = expected.length * spec.expect.each;
    details.unexpected = records
      .filter((r) => !matched.has(r))
      .map((r) => identity(r, spec.key ?? Object.keys(r)));
  }
  if (spec.key) {
    const counts = new Map<string, number>();
    for (const r of records) {
      const id = identity(r, spec.key);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    for (const [id, n] of counts) if (n > 1) duplicated.push(`${id} (${n} times)`);
  }
  details.missing = missing;
  details.duplicated = duplicated;
  if (missing.length)
    problems.push(`missing ${missing.length}: ${missing.slice(0, 8).join("; ")}${more(missing, 8)}`);
  if (duplicated.length)
    problems.push(`duplicated: ${duplicated.slice(0, 8).join("; ")}${more(duplicated, 8)}`);
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
