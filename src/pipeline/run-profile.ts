import path from "node:path";
import type { ProfileSpec } from "../config/profile-schema.js";
import { UsageError } from "../errors.js";
import { runRecord, writeRunRecord } from "../history/run-record.js";
import type { Job } from "../job/build-job.js";
import { sayShell } from "../process/shell.js";
import { aheadReport } from "./cpu-prewarm/ahead-report.js";
import type { RunOptions, RunReport, Stage } from "./run-report.js";
import { RUN_REPORT_SCHEMA } from "./run-report.js";
import { checksStage } from "./stages/checks-stage.js";
import { CommandsStage, plainCommandLog } from "./stages/commands-stage.js";
import { gate } from "./stages/gate.js";
import { restoreStage } from "./stages/restore-stage.js";
import { saveStage } from "./stages/save-stage.js";
import { settleStage } from "./stages/settle-stage.js";

export type {
  CommandKernels,
  CommandLog,
  CommandReport,
  RunOptions,
  RunReport,
  Stage,
} from "./run-report.js";

import { allFetchedAhead, JobLookups, type LazyReport, lazyLine } from "../cache/lazy/job-lookups.js";
import { wholeWords } from "../cache/lazy/lazy-plan.js";
import { readState, restoredContext } from "../cache/local-state.js";
import type { RestoreReport } from "../cache/restore/restore.js";
import { hostEnvironment } from "../environment.js";
import type { Log } from "../log.js";
import { makeFolders } from "../make-folders.js";

export { RUN_REPORT_SCHEMA } from "./run-report.js";

/** Where a profile's logs, telemetry and report go by default: $RUNNER_TEMP/kcache/<profile>, else .kcache/<profile>. */
export function defaultOutDir(profile: string, env: NodeJS.ProcessEnv = hostEnvironment()): string {
  return env.RUNNER_TEMP ? path.join(env.RUNNER_TEMP, "kcache", profile) : path.join(".kcache", profile);
}

/** The job's profile; a job built without one cannot run. */
export function jobProfile(job: Job): { name: string; spec: ProfileSpec } {
  if (!job.profile)
    throw new UsageError("this needs a profile: pass --profile, or the action's profile input");
  return job.profile;
}

/**
 * `kcache run`: the stages in order (stages/): restore, the profile's commands as timed stages, its
 * checks, the gate, and a save only when every command exited 0 and every error-severity check passed.
 */
export async function runProfile(opts: RunOptions): Promise<RunReport> {
  const t0 = performance.now();
  const { job } = opts;
  const { ctx } = job;
  const { name: profileName, spec: profile } = jobProfile(job);
  const outDir = path.resolve(job.cwd, opts.outDir);
  for (const sub of ["logs", "telemetry"]) makeFolders(path.join(outDir, sub));
  const echo = opts.echo === undefined ? process.stdout : opts.echo;
  // Said before anything runs: which shell the commands get where PATH has no bash.
  sayShell({ ...job.env, ...profile.env }, ctx.log);

  const { restored, faults: restoreFaults, stage } = await restoreStage(ctx, opts.restore !== false);
  const stages: Stage[] = [stage];
  // The state the restore left, read once for the save and the end of the job. Under isolate the
  // commands run against the job's own folders, which the restore made.
  const state = readState(ctx.stateFile);
  const work = opts.restore !== false ? restoredContext(ctx, restored, state) : ctx;
  const lookups = opts.restore !== false ? await JobLookups.start(work, state) : null;
  const commands = new CommandsStage(work, profile, {
    env: job.env,
    cwd: job.cwd,
    outDir,
    echo,
    commandLog: opts.commandLog ?? plainCommandLog(ctx.log),
    restoredAutotune: restored?.autotune,
    lookups: lookups?.env(),
  });
  const lazy = await commandsServed(commands, lookups, stages, restored, ctx.log);
  const place = { workdir: commands.workdir, env: commands.env, outDir, profileName };
  const checked = await checksStage(work, profile, place);
  stages.push(checked.stage);
  const verdict = gate(profile, ctx.log, {
    restored,
    commands: commands.commands,
    failedCommand: commands.failed,
    failedChecks: checked.failed,
    stages,
  });
  const { firstFailure } = verdict;
  const saving = await saveStage(ctx, profile, {
    enabled: opts.save !== false,
    firstFailure,
    save: { hook: commands.hookUsage(), evict: opts.evict ?? "yes" },
    state,
  });
  stages.push(saving.stage);
  const hook = commands.hookUsage();
  const folders = await settleStage(ctx, { passed: firstFailure === null, hook }, state);

  const report: RunReport = {
    schema: RUN_REPORT_SCHEMA,
    profile: profileName,
    key: ctx.key,
    scope: ctx.scopes.write,
    revision: ctx.revision,
    stackId: ctx.stack.stackId,
    startedAt: new Date(Date.now() - (performance.now() - t0)).toISOString(),
    seconds: (performance.now() - t0) / 1000,
    restore: restored,
    lazy,
    commands: commands.commands,
    checks: checked.checks,
    save: saving.saved,
    saveSkipped: saving.saveSkipped,
    folders,
    faults: [...restoreFaults, ...saving.faults],
    kernels: verdict.kernels,
    unexpectedCompile: verdict.unexpectedCompile,
    cpuPrewarm: await aheadReport(work, restored, commands.kernelHashes),
    stages,
    passed: firstFailure === null,
    firstFailure,
    exitCode: verdict.exitCode,
    outDir,
  };
  // The run's record beside the caches, for kcache stats and history baselines (never fails the job).
  if (opts.record !== false)
    await writeRunRecord(runRecord(report, ctx, profile.compare, commands.workdir, checked.history), ctx);
  return report;
}

/** Runs the commands, serving their lookups of what a lazy restore left in the store (cache/lazy/) meanwhile. */
async function commandsServed(
  commands: CommandsStage,
  lookups: JobLookups | null,
  stages: Stage[],
  restored: RestoreReport | null,
  log: Log,
): Promise<LazyReport | null> {
  try {
    stages.push(...(await commands.run()));
  } finally {
    await lookups?.stop(restored?.lazy?.prefetched ?? 0);
  }
  // A lazy restore that left nothing in the store served no lookups: every entry came ahead.
  const prefetched = restored?.lazy?.prefetched ?? 0;
  const served = lookups
    ? await lookups.stop(prefetched)
    : restored?.lazy
      ? allFetchedAhead(prefetched)
      : null;
  const lazy =
    served && wholeWords(restored?.lazy?.readWhole)
      ? { ...served, readWhole: restored?.lazy?.readWhole }
      : served;
  if (lazy) log.info(lazyLine(lazy));
  return lazy;
}
