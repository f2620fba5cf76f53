import type { CheckSpec } from "../config/profile-schema.js";
import type { CheckResult } from "./check.js";
import { readNpy, unravel } from "./npy.js";

type Spec = Extract<CheckSpec, { type: "allclose" }>;

/**
 * numpy.allclose over two .npy arrays: |a - b| <= atol + rtol * |b| everywhere, NaN equal to NaN
 * when equal-nan is set. Reports the largest absolute and relative errors and the worst element.
 */
export function allcloseCheck(spec: Spec, fileA: string, fileB: string, name: string): CheckResult {
  const a = readNpy(fileA, spec.dtype);
  const b = readNpy(fileB, spec.dtype);
  const result = (passed: boolean, message: string, details: Record<string, unknown> = {}): CheckResult => ({
    name,
    type: "allclose",
    severity: spec.severity,
    passed,
    file: fileA,
    message,
    details,
  });
  if (a.shape.join(",") !== b.shape.join(",")) {
    return result(
      false,
      `${fileA}: shape (${a.shape.join(", ")}) differs from ${fileB} (${b.shape.join(", ")})`,
    );
  }
  const { maxAbs, maxRel, worst, bad, diffSq, refSq } = compareValues(spec, a.values, b.values);
  const normError = refSq > 0 ? Math.sqrt(diffSq / refSq) : diffSq > 0 ? Number.POSITIVE_INFINITY : 0;
  const details = {
    shape: a.shape,
    dtype: a.dtype,
    maxAbsError: maxAbs,
    maxRelError: maxRel,
    normError,
    mismatched: bad,
    worstIndex: worst >= 0 ? unravel(worst, a.shape) : null,
  };
  const errors = `max abs error ${fmt(maxAbs)}, max rel error ${fmt(maxRel)}, relative L2 error ${fmt(normError)}`;
  const maxNorm = spec["max-norm-error"];
  if (maxNorm !== undefined && !(normError <= maxNorm)) {
    return result(
      false,
      `${fileA} vs ${fileB}: relative L2 error ${fmt(normError)} exceeds max-norm-error ${maxNorm} (${bad} of ${a.values.length} values beyond rtol=${spec.rtol} atol=${spec.atol}; ${errors})`,
      details,
    );
  }
  if (bad === 0)
    return result(
      true,
      `${a.values.length} values within rtol=${spec.rtol} atol=${spec.atol} (${errors})`,
      details,
    );
  const at = `[${details.worstIndex?.join(", ")}]`;
  return result(
    false,
    `${fileA} vs ${fileB}: ${bad} of ${a.values.length} values differ beyond rtol=${spec.rtol} atol=${spec.atol}; ${errors}; worst at ${at}: ${a.values[worst]} vs ${b.values[worst]}`,
    details,
  );
}

function fmt(v: number): string {
  return Number.isFinite(v) ? v.toExponential(3) : String(v);
}

/** Element by element: the largest errors, the count beyond tolerance, the worst element, and the L2 sums. */
function compareValues(spec: Spec, xs: ArrayLike<number>, ys: ArrayLike<number>) {
  let maxAbs = 0;
  let maxRel = 0;
  let worst = -1;
  let worstExcess = 0;
  let bad = 0;
  let diffSq = 0;
  let refSq = 0;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i] as number;
    const y = ys[i] as number;
    if (Number.isFinite(x) && Number.isFinite(y)) {
      diffSq += (x - y) ** 2;
      refSq += y * y;
    }
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (spec["equal-nan"] && Number.isNaN(x) && Number.isNaN(y)) continue;
      bad++;
      if (worst < 0 || worstExcess !== Number.POSITIVE_INFINITY) {
        worst = i;
        worstExcess = Number.POSITIVE_INFINITY;
      }
      continue;
    }
    if (x === y) continue; // equal infinities too
    const diff = Math.abs(x - y);
    const rel = y === 0 ? Number.POSITIVE_INFINITY : diff / Math.abs(y);
    if (diff > maxAbs) maxAbs = diff;
    if (rel > maxRel) maxRel = rel;
    const excess = diff - (spec.atol + spec.rtol * Math.abs(y));
    if (excess > 0 || Number.isNaN(excess)) {
      bad++;
      if (worst < 0 || excess > worstExcess) {
        worst = i;
        worstExcess = excess;
      }
    }
  }
  return { maxAbs, maxRel, worst, bad, diffSq, refSq };
}
