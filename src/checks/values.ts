import type { CheckSpec } from "../config/profile-schema.js";
import type { CheckResult } from "./check.js";
import { canonical, getPath, readRecords } from "./records.js";

type Spec = Extract<CheckSpec, { type: "values" }>;

/**
 * Every record has the expected value in each named field: `validation: [passed]` on each benchmark
 * record, `status: passed` on a file's top level (`records: "."`). A missing field is a wrong value.
 */
export function valuesCheck(spec: Spec, file: string, name: string): CheckResult {
  const records = readRecords(file, spec.records);
  const allowed = Object.entries(spec.expect).map(
    ([field, v]) => [field, (Array.isArray(v) ? v : [v]).map(canonical)] as const,
  );
  const bad: string[] = [];
  records.forEach((r, i) => {
    for (const [field, ok] of allowed) {
      const got = canonical(getPath(r, field));
      if (!ok.includes(got)) {
        const where = spec.records === "." ? "" : `record ${i} `;
        bad.push(`${where}${field}=${got} (expected ${ok.length === 1 ? ok[0] : `one of ${ok.join(", ")}`})`);
      }
    }
  });
  const few = records.length < spec["min-records"];
  if (few) bad.unshift(`${records.length} records, fewer than ${spec["min-records"]}`);
  return {
    name,
    type: "values",
    severity: spec.severity,
    passed: bad.length === 0,
    file,
    message: bad.length
      ? `${file}: ${bad.slice(0, 8).join("; ")}${bad.length > 8 ? `; ... (${bad.length} in all)` : ""}`
      : `${allowed.map(([f, ok]) => `${f} in [${ok.join(", ")}]`).join(", ")} in all ${records.length} records`,
    details: { bad },
  };
}
