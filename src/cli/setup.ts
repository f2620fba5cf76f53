import { type JobContext, jobContext } from "../cache/job-context.js";
import { type Config, loadConfig } from "../config/load.js";
import { createLog, type Log } from "../log.js";
import { stderrProgress } from "../progress.js";
import type { GlobalOptions } from "./options.js";

/** Loads the config and a log for a command. */
export function commandBasics(o: GlobalOptions): { config: Config; log: Log } {
  const log = createLog({ verbose: o.verbose });
  return { config: loadConfig({ file: o.config }), log };
}

/** Config, log and the job context (stack, revision, scopes, key) for commands that need a key. */
export async function commandContext(o: GlobalOptions): Promise<JobContext> {
  const { config, log } = commandBasics(o);
  return jobContext({
    config,
    log,
    revision: o.revision,
    strict: o.strict,
    progress: stderrProgress,
  });
}

/** Prints a result for programs. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
