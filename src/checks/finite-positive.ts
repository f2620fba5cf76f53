import type { CheckSpec } from "../config/profile-schema.js";
import type { CheckResult } from "./check.js";
import { canonical, getPath, readRecords } from "./records.js";

type Spec = Extract<CheckSpec, { type: "finite-positive" }>;

/** Every listed field of every record is a finite number greater than zero (a timing that ran). */
export function finitePositiveCheck(spec: Spec, file: string, name: string): CheckResult {
  const records = readRecords(file, spec.records);
  const bad: string[] = [];
  records.forEach((r, i) => {
    for (const f of spec.fields) {
      const v = getPath(r, f);
      if (typeof v !== "number" || !Number.isFinite(v) || v <= 0)
        bad.push(`record ${i} ${f}=${canonical(v)}`);
    }
  });
  if (records.length === 0) bad.push("no records");
  return {
    name,
    type: "finite-positive",
    severity: spec.severity,
    passed: bad.length === 0,
    file,
    message: bad.length
      ? `${file}: ${bad.length} bad values: ${bad.slice(0, 8).join("; ")}${bad.length > 8 ? "; ..." : ""}`
      : `${spec.fields.join(", ")} finite and > 0 in all ${records.length} records`,
    details: { bad },
  };
}
