import { Strictness } from "../cache/faults.js";
import { parseDuration, parseSize } from "../config/durations.js";
import type { Config } from "../config/resolve.js";
import { UsageError } from "../errors.js";
import { buildJob, type Job, type JobOverrides, jobConfig, parseKind } from "../job/build-job.js";
import type { CacheFolder } from "../kinds/kind.js";
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
    scope: o.scope,
    strict: Strictness.parse(o.strict),
    isolate: o.isolate,
    lazy: o.lazy,
    trustLocal: o.trustLocal,
    maxSize: o.maxSize === undefined ? undefined : sizeOption(o.maxSize, "--max-size"),
  };
}

/** A size flag's bytes ("20GB", "512MiB", bytes); a UsageError naming the flag otherwise. */
export function sizeOption(text: string, flag: string): number {
  const bytes = parseSize(text);
  if (bytes === null) throw new UsageError(`${flag} ${text}: use a size like 500MB, 10GB or 2GiB`);
  return bytes;
}

/** A duration flag's milliseconds ("90s", "30m", "12h", "7d", "2w"); a UsageError naming the flag otherwise. */
export function durationOption(text: string, flag: string): number {
  const ms = parseDuration(text);
  if (ms === null)
    throw new UsageError(`${flag} ${text}: use a number and a unit, like 90s, 30m, 12h, 7d or 2w`);
  return ms;
}

/** The caches this command line names (kcache.yml's, or --path's), without probing the stack. */
export async function commandCaches(o: GlobalOptions): Promise<{ caches: CacheFolder[]; log: Log }> {
  const log = createLog({ verbose: o.verbose, quiet: o.quiet });
  const { config } = await jobConfig({
    configFile: o.config,
    overrides: overridesFrom(o),
    log,
    writesNoState: true,
  });
  return { caches: config.caches, log };
}

/**
 * The configuration (with --store and the other overrides applied) and a log, for commands that need
 * no key and touch no cache folder: a cache path naming a variable this shell lacks ($CACHE_ROOT of
 * a CI job) does not stop `kcache ls` on a laptop.
 */
export async function commandBasics(o: GlobalOptions): Promise<{ config: Config; log: Log }> {
  const log = createLog({ verbose: o.verbose, quiet: o.quiet });
  const req = {
    configFile: o.config,
    // Their --scope (inspect, ls) chooses what to show; it declares nothing.
    overrides: overridesFrom({ ...o, scope: undefined }),
    log,
    cachesUnused: true,
    writesNoState: true,
  };
  return { config: (await jobConfig(req)).config, log };
}

/**
 * The job (config, stack, revision, scopes, key) for commands that restore, save or run;
 * `runsTheJob` for those whose one process runs the whole job (run, prewarm, compare).
 */
export function commandJob(o: GlobalOptions, profile?: string, runsTheJob = false): Promise<Job> {
  return buildJob({
    configFile: o.config,
    overrides: overridesFrom(o, profile ?? o.profile),
    log: createLog({ verbose: o.verbose, quiet: o.quiet }),
    progress: stderrProgress,
    runsTheJob,
  });
}

/** Prints a result for programs. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Runs `fn`; where it fails the command (--strict naming the fault met) and --json was asked for, the
 * result is still printed, `failed` with the error's message, before the error ends the command: a
 * program reading the output gets JSON on every exit.
 */
export async function failedAsJson<T>(
  json: boolean | undefined,
  failed: Record<string, unknown>,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (json) printJson({ ...failed, error: (e as Error).message });
    throw e;
  }
}
