import { Strictness } from "../cache/faults.js";
import type { Config } from "../config/load.js";
import { buildJob, type Job, type JobOverrides, jobConfig, parseKind } from "../job/build-job.js";
import { createLog, type Log } from "../log.js";
import { stderrProgress } from "../progress.js";
import type { GlobalOptions } from "./options.js";

/** The overrides a command line gives, named as the action's inputs are. */
export function overridesFrom(o: GlobalOptions, profile?: string): JobOverrides {
  return {
    store: o.store,
    paths: o.path,
    kind: o.kind === undefined ? undefined : parseKind(o.kind, "--kind"),
    key: o.key,
    restoreKeys: o.restoreKey,
    profile,
    revision: o.revision,
    strict: Strictness.parse(o.strict),
  };
}

/**
 * The configuration (with --store and the other overrides applied) and a log, for commands that need
 * no key and touch no cache folder: a cache path naming a variable this shell lacks ($CACHE_ROOT of
 * a CI job) does not stop `kcache ls` on a laptop.
 */
export function commandBasics(o: GlobalOptions): { config: Config; log: Log } {
  const log = createLog({ verbose: o.verbose });
  return {
    config: jobConfig({ configFile: o.config, overrides: overridesFrom(o), log, cachesUnused: true }).config,
    log,
  };
}

/** The job (config, stack, revision, scopes, key) for commands that restore, save or run. */
export function commandJob(o: GlobalOptions, profile?: string): Promise<Job> {
  return buildJob({
    configFile: o.config,
    overrides: overridesFrom(o, profile),
    log: createLog({ verbose: o.verbose }),
    progress: stderrProgress,
  });
}

/** Prints a result for programs. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
