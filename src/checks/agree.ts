import type { CheckSpec } from "../config/profile-schema.js";
import type { CheckResult } from "./check.js";
import { canonical, getPath, identity, readRecords } from "./records.js";

type Spec = Extract<CheckSpec, { type: "agree" }>;

/**
 * Two result files describe the same cases with the same numbers: records are matched on the key
 * fields, and each listed field ("x", or "x=y" for a's x against b's y) must agree within
 * |a - b| <= atol + rtol * |b|. Records present on one side only are named.
 */
export function agreeCheck(spec: Spec, fileA: string, fileB: string, name: string): CheckResult {
  const a = readRecords(fileA, spec.records);
  const b = readRecords(fileB, spec["b-records"] ?? spec.records);
  const index = (rs: typeof a) => new Map(rs.map((r) => [identity(r, spec.key), r]));
  const ia = index(a);
  const ib = index(b);
  const onlyA = [...ia.keys()].filter((k) => !ib.has(k));
  const onlyB = [...ib.keys()].filter((k) => !ia.has(k));
  const pairs = spec.fields.map((f) => {
    const [x, y] = f.split("=");
    return [x as string, (y ?? x) as string] as const;
  });
  const mismatches: string[] = [];
  let maxRel = 0;
  for (const [id, ra] of ia) {
    const rb = ib.get(id);
    if (!rb) continue;
    for (const [fa, fb] of pairs) {
      const va = getPath(ra, fa);
      const vb = getPath(rb, fb);
      if (typeof va !== "number" || typeof vb !== "number") {
        mismatches.push(`${id}: ${fa}=${canonical(va)} vs ${fb}=${canonical(vb)} (not numbers)`);
        continue;
      }
      if (Number.isNaN(va) && Number.isNaN(vb)) continue;
      const diff = Math.abs(va - vb);
      if (vb !== 0) maxRel = Math.max(maxRel, diff / Math.abs(vb));
      if (!(diff <= spec.atol + spec.rtol * Math.abs(vb))) {
        mismatches.push(`${id}: ${fa}=${va} vs ${fb}=${vb}`);
      }
    }
  }
  const problems: string[] = [];
  if (mismatches.length)
    problems.push(`${mismatches.length} values disagree: ${mismatches.slice(0, 6).join("; ")}`);
  if (onlyA.length) problems.push(`only in ${fileA}: ${onlyA.slice(0, 6).join("; ")}`);
  if (onlyB.length) problems.push(`only in ${fileB}: ${onlyB.slice(0, 6).join("; ")}`);
  return {
    name,
    type: "agree",
    severity: spec.severity,
    passed: problems.length === 0,
    file: fileA,
    message: problems.length
      ? `${fileA} vs ${fileB}: ${problems.join("; ")}`
      : `${ia.size} records agree on ${spec.fields.join(", ")} within rtol=${spec.rtol} atol=${spec.atol} (max rel diff ${maxRel.toExponential(2)})`,
    details: { mismatches, onlyA, onlyB, maxRelDiff: maxRel },
  };
}
