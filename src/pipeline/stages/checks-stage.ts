import path from "node:path";
import type { JobContext } from "../../cache/job-context.js";
import type { CheckResult } from "../../checks/check.js";
import { resolveIn } from "../../checks/records.js";
import { checkName, runCheck } from "../../checks/run-checks.js";
import type { CheckSpec, ProfileSpec } from "../../config/profile-schema.js";
import { historyBaseline, historyRows, isHistoryCheck } from "../../history/baseline.js";
import type { HistoryRows } from "../../history/run-record.js";
import { defaultBranchScope } from "../../keys/scope.js";
import type { Stage } from "../run-report.js";

export interface ChecksOutcome {
  checks: CheckResult[];
  /** The rows of history checks' result files, for the run record. */
  history: Record<string, HistoryRows>;
  failed: CheckResult[];
  stage: Stage;
}

/** Where the checks run: the profile's workdir, the commands' environment, the run's output folder. */
export interface CheckPlace {
  workdir: string;
  env: NodeJS.ProcessEnv;
  outDir: string;
  profileName: string;
}

/** The checks stage: every check of the profile on whatever the commands left, failures warned. */
export async function checksStage(
  ctx: JobContext,
  profile: ProfileSpec,
  place: CheckPlace,
): Promise<ChecksOutcome> {
  const c0 = performance.now();
  const checks: CheckResult[] = [];
  const history: Record<string, HistoryRows> = {};
  for (const [i, spec] of profile.checks.entries()) {
    const logFile = path.join(place.outDir, "logs", `check-${i + 1}.log`);
    const result = isHistoryCheck(spec)
      ? await historyCheck(ctx, { spec, index: i, logFile }, place, history)
      : await runCheck(spec, i, place.workdir, place.env, logFile);
    checks.push(result);
    if (!result.passed)
      ctx.log.warn(
        `check ${result.name} ${result.severity === "error" ? "failed" : "warns"}: ${result.message}`,
      );
  }
  const failed = checks.filter((c) => !c.passed && c.severity === "error");
  const warned = checks.filter((c) => !c.passed && c.severity === "warn");
  const stage: Stage = {
    name: "checks",
    kind: "checks",
    seconds: (performance.now() - c0) / 1000,
    status: failed.length ? "failed" : warned.length ? "warned" : profile.checks.length ? "ok" : "skipped",
    summary: profile.checks.length
      ? `${checks.filter((c) => c.passed).length} passed${failed.length ? `, ${failed.length} failed` : ""}${warned.length ? `, ${warned.length} warned` : ""}`
      : "no checks",
  };
  return { checks, history, failed, stage };
}

/** A threshold check whose baseline is the median of the default branch's recorded runs. */
async function historyCheck(
  ctx: JobContext,
  check: { spec: Extract<CheckSpec, { type: "threshold" }>; index: number; logFile: string },
  place: CheckPlace,
  history: Record<string, HistoryRows>,
): Promise<CheckResult> {
  const { spec, index: i, logFile } = check;
  const name = checkName(spec, i);
  const base = await historyBaseline(spec, name, ctx, place.profileName, place.outDir);
  const defaultScope = defaultBranchScope(ctx.scopes.defaultBranch);
  let result: CheckResult;
  if (base.file) {
    result = await runCheck({ ...spec, baseline: base.file }, i, place.workdir, place.env, logFile);
    result.message += ` (baseline: the median of ${defaultScope}'s last ${base.runs.length} runs: ${base.runs.join(", ")})`;
    result.details = { ...result.details, baselineRuns: base.runs };
  } else {
    result = {
      name,
      type: spec.type,
      severity: spec.severity,
      passed: true,
      message: `no passing run of ${defaultScope} with this stack recorded yet: nothing to compare with`,
    };
  }
  try {
    history[name] = historyRows(spec, resolveIn(place.workdir, spec.file));
  } catch {
    // no result file: the other checks say so
  }
  return result;
}
