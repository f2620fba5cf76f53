import fs from "node:fs";
import path from "node:path";
import { type RestoreReport, restore } from "../cache/restore.js";
import { type SaveReport, save } from "../cache/save.js";
import { tolerateCacheFailure } from "../cache/tolerate.js";
import type { CheckResult } from "../checks/check.js";
import { resolveIn } from "../checks/records.js";
import { checkName, runCheck } from "../checks/run-checks.js";
import { parseDuration } from "../config/durations.js";
import type { CommandSpec, GroupSpec, ProfileSpec } from "../config/profile-schema.js";
import { ExitCode, UsageError } from "../errors.js";
import { historyBaseline, historyRows, isHistoryCheck } from "../history/baseline.js";
import { type HistoryRows, runRecord, writeRunRecord } from "../history/run-record.js";
import type { Job } from "../job/build-job.js";
import { defaultBranchScope } from "../keys/scope.js";
import { mayHoldKernels } from "../kinds/registry.js";
import { deviceEnv } from "../process/devices.js";
import { runCommand } from "../process/run-command.js";
import { withSources } from "../process/source-env.js";
import { compiledBetween, type FolderCount, KernelFolders } from "../telemetry/folder-count.js";
import { telemetryEnv } from "../telemetry/hook.js";
import { type KernelStats, readTelemetry } from "../telemetry/read.js";

export const RUN_REPORT_SCHEMA = "kcache-run-report/1";

export interface Stage {
  name: string;
  kind: "restore" | "command" | "group" | "checks" | "save";
  seconds: number;
  status: "ok" | "failed" | "skipped" | "warned";
  /** One line: "hit (exact)", "exit 2", "3 passed, 1 failed"... */
  summary: string;
  children?: Stage[];
  /** A parallel group whose commands had no listener: compiles counted from the cache folder for the whole group. */
  folderKernels?: FolderCount;
}

/**
 * A command's kernels. With Triton's compilation listener (>= 3.4) every load is counted; without
 * it (Triton-Ascend's 3.2 line) compiles are counted from the cache folder and loads are unknown.
 */
export interface CommandKernels extends Omit<KernelStats, "loaded" | "compileSeconds"> {
  /** Where `compiled` comes from: the listener, new group files in the cache folder, or neither. */
  source: "listener" | "cache-folder" | "none";
  /** Null when only the cache folder was counted. */
  loaded: number | null;
  compileSeconds: number | null;
  /** Compiles counted from the cache folder during this command (also when the listener ran); null in a parallel group or with no Triton cache. */
  folderCompiled: number | null;
}

export interface CommandReport {
  name: string;
  group: string | null;
  run: string;
  exitCode: number;
  timedOut: boolean;
  seconds: number;
  log: string;
  devices: string | null;
  kernels: CommandKernels;
}

export interface RunReport {
  schema: typeof RUN_REPORT_SCHEMA;
  profile: string;
  key: string;
  scope: string;
  revision: string;
  stackId: string;
  startedAt: string;
  seconds: number;
  restore: RestoreReport | null;
  commands: CommandReport[];
  checks: CheckResult[];
  save: SaveReport | null;
  /** Why nothing was saved, when the gate or the policy held the save back. */
  saveSkipped: string | null;
  kernels: {
    status: KernelStats["status"];
    source: CommandKernels["source"];
    loaded: number | null;
    compiled: number;
    compileSeconds: number | null;
  };
  /** Set when `expect: warm` saw kernels compiled after an exact-key restore. */
  unexpectedCompile: string | null;
  stages: Stage[];
  passed: boolean;
  firstFailure: string | null;
  exitCode: number;
  outDir: string;
}

export interface RunOptions {
  /** Built by src/job/ with a profile; its context is what this run restores and saves. */
  job: Job;
  /** Where logs, telemetry and kcache-report.json go. */
  outDir: string;
  /** Restore from the store before the commands (false for a cold run). */
  restore?: boolean;
  /** Save after the gate passed (false to never save). */
  save?: boolean;
  /** Echo command output (default: stdout). */
  echo?: NodeJS.WritableStream | null;
  /** Write a run record to the store (default true; compare's rounds write none). */
  record?: boolean;
}

/** Where a profile's logs, telemetry and report go by default: $RUNNER_TEMP/kcache/<profile>, else .kcache/<profile>. */
export function defaultOutDir(profile: string, env: NodeJS.ProcessEnv = process.env): string {
  return env.RUNNER_TEMP ? path.join(env.RUNNER_TEMP, "kcache", profile) : path.join(".kcache", profile);
}

/** The job's profile; a job built without one cannot run. */
export function jobProfile(job: Job): { name: string; spec: ProfileSpec } {
  if (!job.profile)
    throw new UsageError("this needs a profile: pass --profile, or the action's profile input");
  return job.profile;
}

/**
 * `kcache run`: restore, the profile's commands as timed stages, its checks, and a save only when
 * every command exited 0 and every error-severity check passed.
 */
export async function runProfile(opts: RunOptions): Promise<RunReport> {
  const t0 = performance.now();
  const { job } = opts;
  const { env, cwd, ctx } = job;
  const { log, strict } = ctx;
  const { name: profileName, spec: profile } = jobProfile(job);
  const outDir = path.resolve(cwd, opts.outDir);
  fs.mkdirSync(path.join(outDir, "logs"), { recursive: true });
  fs.mkdirSync(path.join(outDir, "telemetry"), { recursive: true });
  const echo = opts.echo === undefined ? process.stdout : opts.echo;
  const gha = env.GITHUB_ACTIONS === "true";
  const stages: Stage[] = [];

  // Restore.
  let restored: RestoreReport | null = null;
  if (opts.restore !== false) {
    const s0 = performance.now();
    restored = await tolerateCacheFailure("restore", strict, log, () => restore(ctx));
    stages.push({
      name: "restore",
      kind: "restore",
      seconds: (performance.now() - s0) / 1000,
      status: restored ? "ok" : "warned",
      summary: !restored
        ? "store failed (warned)"
        : restored.matchedKey
          ? `${restored.cacheHit ? "hit (exact)" : `partial (${restored.matchedKey})`}, ${restored.entriesRestored} entries from ${restored.store}`
          : `miss (${restored.store})`,
    });
  } else {
    stages.push({
      name: "restore",
      kind: "restore",
      seconds: 0,
      status: "skipped",
      summary: "cold run: nothing restored",
    });
  }

  // Commands.
  const baseEnv: NodeJS.ProcessEnv = { ...env, ...profile.env };
  for (const c of ctx.caches) {
    fs.mkdirSync(c.path, { recursive: true });
    if (c.env) baseEnv[c.env] = c.path;
  }
  const workdir = profile.workdir ? path.resolve(cwd, profile.workdir) : cwd;
  // Triton caches (or ones whose kind is detected later) are where compiles can be counted without a listener.
  const folders = new KernelFolders(ctx.caches.filter(mayHoldKernels).map((c) => c.path));
  const commands: CommandReport[] = [];
  let failedCommand: CommandReport | null = null;
  const runOne = async (
    cmd: CommandSpec,
    group: string | null,
    devices: string[] | undefined,
    prefix?: string,
  ) => {
    const telemetryFile = path.join(outDir, "telemetry", `${cmd.name}.jsonl`);
    fs.rmSync(telemetryFile, { force: true });
    const devs = cmd.devices ?? devices;
    const cmdEnv = telemetryEnv({ ...baseEnv, ...cmd.env, ...(devs ? deviceEnv(devs) : {}) }, telemetryFile);
    const logFile = path.join(outDir, "logs", `${cmd.name}.log`);
    const before = group === null && folders.counting ? folders.before() : null;
    if (echo && gha && !prefix) echo.write(`::group::${cmd.name}: ${cmd.run}\n`);
    else log.info(`${cmd.name}: ${cmd.run}${devs ? ` (devices ${devs.join(",")})` : ""}`);
    const cmdCwd = cmd.workdir ? path.resolve(workdir, cmd.workdir) : workdir;
    const r = await runCommand({
      run: withSources(cmd.run, cmd.source ?? [], workdir),
      cwd: cmdCwd,
      env: cmdEnv,
      logFile,
      timeoutMs: cmd.timeout ? (parseDuration(cmd.timeout) as number) : undefined,
      echo,
      linePrefix: prefix,
    });
    if (echo && gha && !prefix) echo.write("::endgroup::\n");
    const report: CommandReport = {
      name: cmd.name,
      group,
      run: cmd.run,
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      seconds: r.seconds,
      log: logFile,
      devices: devs ? devs.join(",") : null,
      kernels: commandKernels(
        readTelemetry(telemetryFile),
        before ? compiledBetween(before, folders.after()) : null,
      ),
    };
    commands.push(report);
    if (r.exitCode !== 0) {
      failedCommand ??= report;
      log.warn(
        `${cmd.name} ${r.timedOut ? `timed out after ${cmd.timeout}` : `exited ${r.exitCode}`}; its output is in ${logFile}`,
      );
    }
    return { report, stage: commandStage(report) };
  };

  for (const item of profile.commands) {
    if (failedCommand && !profile["continue-on-error"]) {
      stages.push({
        name: item.name,
        kind: "parallel" in item ? "group" : "command",
        seconds: 0,
        status: "skipped",
        summary: "not run: an earlier command failed",
      });
      continue;
    }
    if ("parallel" in item) stages.push(await runGroup(item, runOne, folders, commands));
    else stages.push((await runOne(item, null, undefined)).stage);
  }

  // Checks, on whatever the commands left.
  const c0 = performance.now();
  const checks: CheckResult[] = [];
  const history: Record<string, HistoryRows> = {};
  for (const [i, spec] of profile.checks.entries()) {
    const logFile = path.join(outDir, "logs", `check-${i + 1}.log`);
    let result: CheckResult;
    if (isHistoryCheck(spec)) {
      const name = checkName(spec, i);
      const base = await historyBaseline(spec, name, ctx, profileName, outDir);
      const defaultScope = defaultBranchScope(ctx.scopes.defaultBranch);
      if (base.file) {
        result = await runCheck({ ...spec, baseline: base.file }, i, workdir, baseEnv, logFile);
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
        history[name] = historyRows(spec, resolveIn(workdir, spec.file));
      } catch {
        // no result file: the other checks say so
      }
    } else result = await runCheck(spec, i, workdir, baseEnv, logFile);
    checks.push(result);
    if (!result.passed)
      log.warn(`check ${result.name} ${result.severity === "error" ? "failed" : "warns"}: ${result.message}`);
  }
  const failedChecks = checks.filter((c) => !c.passed && c.severity === "error");
  const warnedChecks = checks.filter((c) => !c.passed && c.severity === "warn");
  stages.push({
    name: "checks",
    kind: "checks",
    seconds: (performance.now() - c0) / 1000,
    status: failedChecks.length
      ? "failed"
      : warnedChecks.length
        ? "warned"
        : profile.checks.length
          ? "ok"
          : "skipped",
    summary: profile.checks.length
      ? `${checks.filter((c) => c.passed).length} passed${failedChecks.length ? `, ${failedChecks.length} failed` : ""}${warnedChecks.length ? `, ${warnedChecks.length} warned` : ""}`
      : "no checks",
  });

  // Kernel telemetry across commands, and the warm expectation.
  const kernels = totalKernels(commands, stages);
  let unexpectedCompile: string | null = null;
  if (profile.expect === "warm" && restored?.cacheHit && kernels.compiled > 0) {
    const names = [
      ...new Set([
        ...commands.flatMap((c) => c.kernels.compiledKernels),
        ...stages.flatMap((s) => s.folderKernels?.kernels ?? []),
      ]),
    ].slice(0, 5);
    unexpectedCompile = `${kernels.compiled} kernels compiled after an exact-key restore (expect: warm): ${names.join(", ")}`;
    log.warn(unexpectedCompile);
  }
  const expectFailed = unexpectedCompile !== null && profile["on-unexpected-compile"] === "fail";

  // The gate.
  const firstFailure = failedCommand
    ? `command ${(failedCommand as CommandReport).name} (exit ${(failedCommand as CommandReport).exitCode})`
    : failedChecks[0]
      ? `check ${failedChecks[0].name}`
      : expectFailed
        ? "expect: warm (kernels compiled after an exact-key restore)"
        : null;
  let saved: SaveReport | null = null;
  let saveSkipped: string | null = null;
  const s0 = performance.now();
  if (opts.save === false) saveSkipped = "saving is off for this run (--no-save)";
  else if (profile.save === "never") saveSkipped = "saving is off for this profile (save: never)";
  else if (firstFailure) saveSkipped = `not saved: ${firstFailure} failed`;
  else {
    saved = await tolerateCacheFailure("save", strict, log, () => save(ctx));
    if (!saved) saveSkipped = "the store failed (warned)";
    else log.info(`${saved.message} (${saved.store})`);
  }
  stages.push({
    name: "save",
    kind: "save",
    seconds: (performance.now() - s0) / 1000,
    status: saved
      ? "ok"
      : firstFailure
        ? "skipped"
        : saveSkipped?.startsWith("saving is off")
          ? "skipped"
          : "warned",
    summary: saved ? saved.outcome : (saveSkipped as string),
  });

  const exitCodeValue = failedCommand
    ? (failedCommand as CommandReport).exitCode
    : failedChecks.length || expectFailed
      ? ExitCode.checkFailed
      : ExitCode.ok;
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
    commands,
    checks,
    save: saved,
    saveSkipped,
    kernels,
    unexpectedCompile,
    stages,
    passed: firstFailure === null,
    firstFailure,
    exitCode: exitCodeValue,
    outDir,
  };
  // The run's record beside the caches, for kcache stats and history baselines (never fails the job).
  if (opts.record !== false)
    await writeRunRecord(runRecord(report, ctx, profile.compare, workdir, history), ctx);
  return report;
}

async function runGroup(
  group: GroupSpec,
  runOne: (
    cmd: CommandSpec,
    group: string | null,
    devices: string[] | undefined,
    prefix?: string,
  ) => Promise<{ report: CommandReport; stage: Stage }>,
  folders: KernelFolders,
  commands: CommandReport[],
): Promise<Stage> {
  const g0 = performance.now();
  const before = folders.counting ? folders.before() : null;
  const slots = group.devices ? group.devices.length : group.parallel.length;
  const children: Stage[] = new Array(group.parallel.length);
  let next = 0;
  // A pool of device slots: command i waits for a free device when there are more commands than devices.
  const worker = async (slot: number) => {
    while (next < group.parallel.length) {
      const i = next++;
      const cmd = group.parallel[i] as CommandSpec;
      const devices = group.devices ? [group.devices[slot] as string] : undefined;
      children[i] = (await runOne(cmd, group.name, devices, `[${cmd.name}] `)).stage;
    }
  };
  await Promise.all(Array.from({ length: Math.min(slots, group.parallel.length) }, (_, s) => worker(s)));
  const failed = children.filter((c) => c.status === "failed").length;
  // Commands running at once share the cache folder: without their listeners, count the group as one.
  const members = commands.filter((c) => c.group === group.name);
  const folder =
    before && members.some((c) => c.kernels.status === "unavailable")
      ? compiledBetween(before, folders.after())
      : null;
  if (!folder) folders.forget();
  return {
    name: group.name,
    kind: "group",
    seconds: (performance.now() - g0) / 1000,
    status: failed ? "failed" : "ok",
    summary: `${children.length - failed} of ${children.length} exited 0${folder ? `; ${folder.compiled} kernels compiled (cache folder)` : ""}`,
    children,
    ...(folder ? { folderKernels: folder } : {}),
  };
}

/** One command's kernels: the listener's counts where it ran, else the cache folder's. */
function commandKernels(listener: KernelStats, folder: FolderCount | null): CommandKernels {
  const folderCompiled = folder ? folder.compiled : null;
  if (listener.status === "available" || listener.status === "no-triton")
    return { ...listener, source: listener.status === "available" ? "listener" : "none", folderCompiled };
  if (folder)
    return {
      ...listener,
      source: "cache-folder",
      loaded: null,
      compiled: folder.compiled,
      compileSeconds: null,
      compiledKernels: folder.kernels,
      folderCompiled,
    };
  return { ...listener, source: "none", loaded: null, compileSeconds: null, folderCompiled };
}

function commandStage(r: CommandReport): Stage {
  const k = r.kernels;
  const kernels =
    k.source === "listener"
      ? `; ${k.loaded} kernels loaded, ${k.compiled} compiled`
      : k.source === "cache-folder"
        ? `; ${k.compiled} kernels compiled (cache folder)`
        : k.status === "unavailable"
          ? r.group
            ? ""
            : "; telemetry unavailable"
          : "";
  return {
    name: r.name,
    kind: "command",
    seconds: r.seconds,
    status: r.exitCode === 0 ? "ok" : "failed",
    summary: `${r.timedOut ? "timed out" : `exit ${r.exitCode}`}${kernels}`,
  };
}

/**
 * Kernels across the run. A parallel group counted from the cache folder counts as one unit (its
 * commands' own figures are left out); everything else adds up command by command.
 */
function totalKernels(commands: CommandReport[], stages: Stage[]): RunReport["kernels"] {
  const statuses = commands.map((c) => c.kernels.status);
  const folderGroups = new Set(stages.filter((s) => s.folderKernels).map((s) => s.name));
  const own = commands.filter((c) => !(c.group && folderGroups.has(c.group)));
  const groupCompiled = stages.reduce((n, s) => n + (s.folderKernels?.compiled ?? 0), 0);
  const byFolder = folderGroups.size > 0 || own.some((c) => c.kernels.source === "cache-folder");
  const unknown = own.some((c) => c.kernels.loaded === null) || folderGroups.size > 0;
  const sum = (f: (c: CommandReport) => number | null) => own.reduce((n, c) => n + (f(c) ?? 0), 0);
  return {
    status: statuses.includes("available")
      ? "available"
      : statuses.includes("unavailable")
        ? "unavailable"
        : "no-triton",
    source: byFolder ? "cache-folder" : statuses.includes("available") ? "listener" : "none",
    loaded: unknown ? null : sum((c) => c.kernels.loaded),
    compiled: sum((c) => c.kernels.compiled) + groupCompiled,
    compileSeconds: unknown ? null : sum((c) => c.kernels.compileSeconds),
  };
}
