import type { CheckSpec } from "../config/profile-schema.js";
import { runCommand } from "../process/run-command.js";
import { agreeCheck } from "./agree.js";
import { allcloseCheck } from "./allclose.js";
import { type CheckResult, ResultFileError } from "./check.js";
import { coverageCheck } from "./coverage.js";
import { finitePositiveCheck } from "./finite-positive.js";
import { resolveIn } from "./records.js";
import { thresholdCheck } from "./threshold.js";
import { valuesCheck } from "./values.js";

/** A default name people recognise: the type and the file it reads. */
export function checkName(spec: CheckSpec, index: number): string {
  if (spec.name) return spec.name;
  const subject = "file" in spec ? spec.file : "a" in spec ? `${spec.a} vs ${spec.b}` : `#${index + 1}`;
  return `${spec.type} ${subject}`;
}

/**
 * Runs one check against what the commands left in `dir`. A missing or malformed result file is a
 * failed check with a message naming the file, never an exception.
 */
export async function runCheck(
  spec: CheckSpec,
  index: number,
  dir: string,
  env: NodeJS.ProcessEnv,
  logFile: string,
): Promise<CheckResult> {
  const name = checkName(spec, index);
  const at = (f: string) => resolveIn(dir, f);
  try {
    switch (spec.type) {
      case "coverage":
        return coverageCheck(spec, at(spec.file), name);
      case "finite-positive":
        return finitePositiveCheck(spec, at(spec.file), name);
      case "values":
        return valuesCheck(spec, at(spec.file), name);
      case "threshold":
        return thresholdCheck(spec, at(spec.file), spec.baseline ? at(spec.baseline) : null, name);
      case "allclose":
        return allcloseCheck(spec, at(spec.a), at(spec.b), name);
      case "agree":
        return agreeCheck(spec, at(spec.a), at(spec.b), name);
      case "command": {
        const r = await runCommand({
          run: spec.run,
          cwd: spec.workdir ? at(spec.workdir) : dir,
          env: { ...env, ...spec.env },
          logFile,
          echo: null,
        });
        return {
          name,
          type: "command",
          severity: spec.severity,
          passed: r.exitCode === 0,
          message:
            r.exitCode === 0
              ? `\`${spec.run}\` exited 0`
              : `\`${spec.run}\` exited ${r.exitCode}; its output is in ${logFile}`,
          details: { exitCode: r.exitCode, log: logFile },
        };
      }
    }
  } catch (e) {
    if (!(e instanceof ResultFileError)) throw e;
    const file = "file" in spec ? at(spec.file) : "a" in spec ? at(spec.a) : undefined;
    return { name, type: spec.type, severity: spec.severity, passed: false, message: e.message, file };
  }
}
