import type { Log } from "../log.js";
import type { CommandLog } from "../pipeline/run-report.js";
import { plainCommandLog } from "../pipeline/stages/commands-stage.js";

/**
 * Under GitHub Actions, each command of a run that runs alone is folded into a `::group::` of the
 * job's log, titled with its name and command line; commands running beside others (their lines
 * prefixed) get a log line, as outside GitHub. Elsewhere: undefined, the run's plain log lines.
 */
export function githubCommandLog(
  env: NodeJS.ProcessEnv,
  echo: NodeJS.WritableStream | null,
  log: Log,
): CommandLog | undefined {
  if (env.GITHUB_ACTIONS !== "true") return undefined;
  const plain = plainCommandLog(log);
  return {
    started(cmd, devices, inGroup) {
      if (!echo || inGroup) return plain.started(cmd, devices, inGroup);
      echo.write(`::group::${cmd.name}: ${cmd.run}\n`);
      return () => echo.write("::endgroup::\n");
    },
  };
}
