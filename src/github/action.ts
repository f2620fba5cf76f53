import * as core from "@actions/core";
import { Strictness } from "../cache/faults.js";
import { serveLookups } from "../cache/lazy/lookup-daemon.js";
import { afterRestore, readState, restoredContext } from "../cache/local-state.js";
import { restore } from "../cache/restore/restore.js";
import type { SaveOptions } from "../cache/save/save.js";
import { keyRecorded } from "../cache/save/save-report.js";
import { tolerateCacheFailure } from "../cache/tolerate.js";
import { usageSummary } from "../cache/usage/save-usage.js";
import { parseSize } from "../config/durations.js";
import { hostEnvironment } from "../environment.js";
import { CacheMissError, KcacheError, UsageError } from "../errors.js";
import { buildJob, type Job, type JobOverrides, parseKind } from "../job/build-job.js";
import type { Log } from "../log.js";
import { dropInSave, jobHookUsage } from "../pipeline/drop-in-save.js";
import { inOutFolder } from "../pipeline/out-folder.js";
import { prewarm } from "../pipeline/prewarm.js";
import { defaultOutDir, type RunReport, runProfile } from "../pipeline/run-profile.js";
import { settleStage } from "../pipeline/stages/settle-stage.js";
import { stderrProgress } from "../progress.js";
import { installHook, servesLookups, startLookups, stopLookups } from "./action-lookups.js";
import { githubCommandLog } from "./command-groups.js";
import { Inputs, Outputs, SAVE_ALWAYS_ENV, State } from "./io-names.js";
import { publishRun, setOutputs } from "./outputs.js";

export { Inputs };

const MODES = ["run", "restore", "save", "prewarm"] as const;
type Mode = (typeof MODES)[number];

/** Messages through @actions/core, so they are annotations and folded groups in the job log. */
function actionLog(): Log {
  const warnings: string[] = [];
  return {
    warnings,
    info: (m) => core.info(`kcache: ${m}`),
    warn: (m) => {
      warnings.push(m);
      core.warning(m, { title: "kcache" });
    },
    debug: (m) => core.debug(m),
  };
}

/**
 * A true/false input. An input the action.yml at hand does not declare (restore/ has no save-always)
 * reads as false, where core.getBooleanInput would throw.
 */
function flag(name: string): boolean {
  const v = core.getInput(name);
  if (v === "" || /^(false|False|FALSE)$/.test(v)) return false;
  if (/^(true|True|TRUE)$/.test(v)) return true;
  throw new UsageError(`input ${name}: "${v}" is not true or false`);
}

/** The inputs as overrides of kcache.yml: the same shape the CLI's flags take. */
function inputOverrides(key?: string): JobOverrides {
  const text = (name: string) => core.getInput(name) || undefined;
  const lines = (name: string) => {
    const l = core.getMultilineInput(name);
    return l.length ? l : undefined;
  };
  return {
    store: text(Inputs.store),
    paths: lines(Inputs.path),
    kind: parseKind(core.getInput(Inputs.kind), `input ${Inputs.kind}:`),
    key: key ?? text(Inputs.key),
    restoreKeys: lines(Inputs.restoreKeys),
    profile: text(Inputs.profile),
    strict: Strictness.parse(core.getInput(Inputs.strict) || undefined, `input ${Inputs.strict}:`),
    trustLocal: flag(Inputs.trustLocal) || undefined,
    isolate: flag(Inputs.isolate) || undefined,
    lazy: flag(Inputs.lazy) || undefined,
    maxSize: sizeInput(Inputs.maxSize),
  };
}

/** A size input ("20GB", "512MiB", bytes), or undefined when not given. */
function sizeInput(name: string): number | undefined {
  const v = core.getInput(name);
  if (!v) return undefined;
  const bytes = parseSize(v);
  if (bytes === null || bytes <= 0)
    throw new UsageError(`input ${name}: "${v}" is not a size: write 20GB, 512MiB or a number of bytes`);
  return bytes;
}

/** The job the inputs describe; `runsTheJob` in the modes whose one step runs the whole job (run, prewarm). */
function job(log: Log, key?: string, runsTheJob = false): Promise<Job> {
  return buildJob({
    configFile: core.getInput(Inputs.config) || undefined,
    overrides: inputOverrides(key),
    log,
    progress: stderrProgress,
    runsTheJob,
  });
}

/** Inputs that mean something only in other modes are named in a warning, never silently dropped. */
function warnUnused(mode: Mode, postSave: boolean): void {
  const only: [string, (m: Mode) => boolean][] = [
    [Inputs.lookupOnly, (m) => m === "restore"],
    [Inputs.failOnCacheMiss, (m) => m === "restore"],
    [Inputs.ifChanged, (m) => m === "prewarm"],
    [Inputs.cpu, (m) => m === "prewarm"],
    [Inputs.workers, (m) => m === "prewarm"],
  ];
  for (const [name, applies] of only) {
    if (core.getInput(name) && core.getInput(name) !== "false" && !applies(mode))
      core.warning(`input ${name} applies to mode ${MODES.find(applies)}; it is ignored in mode ${mode}`, {
        title: "kcache",
      });
  }
  if (flag(Inputs.saveAlways) && !postSave)
    core.warning(
      `input ${Inputs.saveAlways} applies when the action restores and saves in its post step (no mode, no profile); it is ignored in mode ${mode}`,
      { title: "kcache" },
    );
  for (const name of [Inputs.uploadChunkSize, Inputs.enableCrossOsArchive])
    if (core.getInput(name)) core.debug(`input ${name} is accepted for actions/cache workflows and not used`);
}

async function restoreStep(log: Log, postSave: boolean): Promise<void> {
  const j = await job(log);
  const { ctx } = j;
  setOutputs({ [Outputs.primaryKey]: ctx.key });
  const lookupOnly = flag(Inputs.lookupOnly);
  const serves = servesLookups(ctx, lookupOnly);
  const r = await tolerateCacheFailure("restore", ctx.strict, log, () =>
    restore(ctx, { lookupOnly, servesLookups: serves }),
  );
  // Every job gets the hook: what its processes write is what its save can call its own (on a folder
  // other jobs may write, the only thing it can).
  if (!lookupOnly) installHook(jobTelemetry(ctx), log);
  if (r && serves) await startLookups(r, log);
  // Later steps find each cache where it was restored: a folder of the job's own under isolate.
  for (const c of restoredContext(ctx, r).caches) if (c.env) core.exportVariable(c.env, c.path);
  setOutputs({
    [Outputs.cacheHit]: String(Boolean(r?.cacheHit)),
    [Outputs.matchedKey]: r?.matchedKey ?? "",
  });
  const store = ctx.store.description;
  if (!r?.matchedKey) log.info(`cache miss: no saved key matched ${ctx.key} (${store})`);
  else if (r.lookupOnly)
    log.info(
      `found ${r.matchedKey}${r.cacheHit ? " (exact)" : ""} in ${store} (lookup only, nothing downloaded)`,
    );
  else
    log.info(
      `restored ${r.entriesRestored} entries from ${r.matchedKey}${r.cacheHit ? " (exact)" : ` (${r.matchedScope})`} of ${store}${r.threads ? ` on ${r.threads} threads` : ""}`,
    );
  if (postSave) {
    core.saveState(State.saveInPost, "true");
    core.saveState(State.primaryKey, ctx.key);
    if (flag(Inputs.saveAlways)) core.exportVariable(SAVE_ALWAYS_ENV, "true");
  }
  if (!r?.matchedKey && flag(Inputs.failOnCacheMiss)) {
    throw new CacheMissError(`no cache matched ${ctx.key} (fail-on-cache-miss)`);
  }
}

async function saveStep(log: Log, key?: string, post = false): Promise<void> {
  const { ctx, env } = await job(log, key);
  setOutputs({ [Outputs.primaryKey]: ctx.key });
  // With save-always the post step also runs after a failed step, which it cannot tell apart: such a
  // save keeps every entry (a failed job's use proves nothing).
  const opts: SaveOptions =
    post && env[SAVE_ALWAYS_ENV] === "true"
      ? { evict: { never: "save-always: the job may have failed, so its use proves nothing" } }
      : {};
  // The lookups the restore step served end first: the state then says what came from other jobs live.
  const lazy = await stopLookups(log);
  const state = readState(ctx.stateFile);
  // What the hook the restore step installed recorded: for the save, and for the end of the job's record of use.
  const hook = jobHookUsage(ctx, state);
  const r = await dropInSave(ctx, hook ? { ...opts, hook } : opts, [], state, lazy);
  if (r) log.info(`${r.message} (${r.store})`);
  if (r && keyRecorded(r.outcome))
    log.info(usageSummary(r.usage, { runs: ctx.save.keepUnusedRuns, days: ctx.save.keepUnusedDays }));
  setOutputs({ [Outputs.saved]: String(keyRecorded(r?.outcome)) });
  // The step runs after the job passed (post-if), or under save-always after any job.
  const noMerge = typeof opts.evict === "object" ? opts.evict.never : undefined;
  await settleStage(ctx, { passed: true, noMerge, hook }, state);
}

/** The telemetry file this key's restore made for the job (its local state says), or null. */
function jobTelemetry(ctx: { key: string; stateFile: string }): string | null {
  const state = readState(ctx.stateFile);
  const file = state?.primaryKey === ctx.key ? state.job?.attribution?.telemetry : undefined;
  return typeof file === "string" ? file : null;
}

function publish(report: RunReport): void {
  publishRun(report, hostEnvironment(), { markdownTo: process.stdout, annotations: "stdout" });
  if (report.exitCode !== 0)
    core.setFailed(
      `kcache run ${report.profile}: failed at ${report.firstFailure} (exit ${report.exitCode})`,
    );
}

async function runStep(log: Log): Promise<void> {
  const j = await job(log, undefined, true);
  const held = { given: false, cwd: j.cwd, log };
  await inOutFolder(defaultOutDir(j.profile?.name as string), held, async (outDir) =>
    publish(await runProfile({ job: j, outDir, commandLog: githubCommandLog(j.env, process.stdout, log) })),
  );
}

async function prewarmStep(log: Log): Promise<void> {
  const j = await job(log, undefined, true);
  if (flag(Inputs.cpu)) {
    if (core.getInput(Inputs.ifChanged)) log.warn(`input ${Inputs.ifChanged} is ignored with cpu: true`);
    return (await import("./action-cpu-prewarm.js")).cpuPrewarmStep(j);
  }
  const held = { given: false, cwd: j.cwd, log };
  await inOutFolder(defaultOutDir(j.profile?.name as string), held, async (outDir) => {
    const r = await prewarm({
      job: j,
      outDir,
      ifChanged: core.getMultilineInput(Inputs.ifChanged),
      commandLog: githubCommandLog(j.env, process.stdout, log),
    });
    setOutputs({
      [Outputs.primaryKey]: r.key,
      [Outputs.matchedKey]: r.matchedKey ?? "",
      [Outputs.prewarm]: r.outcome,
    });
    if (r.run) publish(r.run);
  });
}

/**
 * The process the restore step starts to serve the job's lookups until the save step
 * (action-lookups.ts): the same inputs build the same job, whose restore the local state records.
 * It writes nothing to the job's log: what it warns of is in its answer to the stop request.
 */
export async function runLookupDaemon(prefetched: number): Promise<void> {
  const warnings: string[] = [];
  const log: Log = { warnings, info: () => {}, warn: (m) => warnings.push(m), debug: () => {} };
  try {
    const { ctx } = await job(log);
    const state = readState(ctx.stateFile);
    if (await serveLookups(afterRestore(ctx, state), state, prefetched, warnings, process.stdout)) return;
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ error: (e as Error).message })}\n`);
  }
  // Nothing to serve: leave once the answer is written (a store client's sockets must not keep it).
  process.stdout.write("", () => process.exit(0));
}

/**
 * The action. With no mode: a profile runs (`kcache run`); without a profile the main step restores
 * and the post step saves, as actions/cache does. Explicit modes: run, restore, save, prewarm. Store
 * failures warn and the job goes on (unless strict).
 */
export async function runAction(): Promise<void> {
  const log = actionLog();
  const post = core.getState(State.isPost) === "true";
  try {
    if (post) {
      if (core.getState(State.saveInPost) === "true")
        await saveStep(log, core.getState(State.primaryKey), true);
      return;
    }
    core.saveState(State.isPost, "true");
    const given = core.getInput(Inputs.mode);
    const profile = core.getInput(Inputs.profile);
    if (given && !(MODES as readonly string[]).includes(given))
      throw new UsageError(`input mode "${given}": use ${MODES.join(", ")}, or leave it out`);
    const mode: Mode = (given as Mode) || (profile ? "run" : "restore");
    const postSave = !given && !profile;
    if ((mode === "run" || mode === "prewarm") && !profile)
      throw new UsageError(`mode ${mode} needs the profile input (a profile in kcache.yml)`);
    warnUnused(mode, postSave);
    switch (mode) {
      case "restore":
        return await restoreStep(log, postSave);
      case "save":
        return await saveStep(log);
      case "run":
        return await runStep(log);
      case "prewarm":
        return await prewarmStep(log);
    }
  } catch (e) {
    if (e instanceof KcacheError) core.setFailed(e.message);
    else core.setFailed(`kcache: internal error (please report): ${(e as Error).stack ?? e}`);
  }
}
