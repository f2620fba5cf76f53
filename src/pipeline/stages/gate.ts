import type { RestoreReport } from "../../cache/restore/restore.js";
import type { CheckResult } from "../../checks/check.js";
import type { ProfileSpec } from "../../config/profile-schema.js";
import { ExitCode } from "../../errors.js";
import type { Log } from "../../log.js";
import type { CommandReport, RunReport, Stage } from "../run-report.js";
import { totalKernels } from "./command-kernels.js";

export interface GateVerdict {
  kernels: RunReport["kernels"];
  /** Set when `expect: warm` saw kernels compiled after an exact-key restore. */
  unexpectedCompile: string | null;
  /** What failed first (a command, a check, the warm expectation); null: the save may go ahead. */
  firstFailure: string | null;
  exitCode: number;
}

/**
 * The gate between the checks and the save: the run's kernels, the warm expectation, and the first
 * failure, which holds the save back and decides the exit code (the failed command's own, or 6).
 */
export function gate(
  profile: ProfileSpec,
  log: Log,
  run: {
    restored: RestoreReport | null;
    commands: CommandReport[];
    failedCommand: CommandReport | null;
    failedChecks: CheckResult[];
    stages: Stage[];
  },
): GateVerdict {
  const { commands, stages, failedCommand, failedChecks } = run;
  const kernels = totalKernels(commands, stages);
  let unexpectedCompile: string | null = null;
  const graphMisses = (kernels.graphs?.fxgraphMisses ?? 0) + (kernels.graphs?.aotMisses ?? 0);
  if (profile.expect === "warm" && run.restored?.cacheHit && (kernels.compiled > 0 || graphMisses > 0)) {
    const names = [
      ...new Set([
        ...commands.flatMap((c) => c.kernels.compiledKernels),
        ...stages.flatMap((s) => s.folderKernels?.kernels ?? []),
      ]),
    ].slice(0, 5);
    const g = kernels.graphs;
    unexpectedCompile = [
      kernels.compiled > 0
        ? `${kernels.compiled} kernels compiled after an exact-key restore (expect: warm): ${names.join(", ")}`
        : null,
      graphMisses > 0
        ? `torch.compile missed its caches after an exact-key restore (expect: warm): ${g?.fxgraphMisses} FX graph and ${g?.aotMisses} AOTAutograd cache misses`
        : null,
    ]
      .filter(Boolean)
      .join("; ");
    log.warn(unexpectedCompile);
  }
  const expectFailed = unexpectedCompile !== null && profile["on-unexpected-compile"] === "fail";
  const firstFailure = failedCommand
    ? `command ${failedCommand.name} (exit ${failedCommand.exitCode})`
    : failedChecks[0]
      ? `check ${failedChecks[0].name}`
      : expectFailed
        ? "expect: warm (kernels compiled after an exact-key restore)"
        : null;
  const exitCode = failedCommand
    ? failedCommand.exitCode
    : failedChecks.length || expectFailed
      ? ExitCode.checkFailed
      : ExitCode.ok;
  return { kernels, unexpectedCompile, firstFailure, exitCode };
}
