import fs from "node:fs";
import path from "node:path";
import { inLanes } from "../../bounded-lanes.js";
import { commandAutotune } from "../../cache/autotune/symmetry.js";
import type { AutotuneRestore } from "../../cache/autotune/withhold.js";
import type { JobContext } from "../../cache/job-context.js";
import type { LookupEnv } from "../../cache/lazy/job-lookups.js";
import { type RecordedPlan, recordedPlan } from "../../cache/plan/plan.js";
import type { HookUsage } from "../../cache/usage/save-usage.js";
import { parseDuration } from "../../config/durations.js";
import type { CommandSpec, GroupSpec, ProfileSpec } from "../../config/profile-schema.js";
import { mayHoldKernels } from "../../kinds/registry.js";
import type { Log } from "../../log.js";
import { makeFolders } from "../../make-folders.js";
import { deviceEnv } from "../../process/devices.js";
import { runCommand } from "../../process/run-command.js";
import { withSources } from "../../process/source-env.js";
import { compiledBetween, KernelFolders } from "../../telemetry/folder-count.js";
import { telemetryEnv } from "../../telemetry/hook.js";
import { type KernelStats, MAX_PLAN_LINES, readTelemetry } from "../../telemetry/read.js";
import { checkoutRoot } from "../cpu-prewarm/checkout.js";
import type { CommandLog, CommandReport, Stage } from "../run-report.js";
import { ClearTrap } from "./clear-trap.js";
import { commandKernels } from "./command-kernels.js";

/** Where the commands run: the job's environment and folder, the run's output folder, its echo and log. */
export interface CommandPlace {
  env: NodeJS.ProcessEnv;
  cwd: string;
  outDir: string;
  echo: NodeJS.WritableStream | null;
  commandLog: CommandLog;
  /** What the restore gave and withheld of autotune results, for each command's report. */
  restoredAutotune?: AutotuneRestore | null;
  /** Where the commands' lookups of entries a lazy restore left in the store go (cache/lazy/). */
  lookups?: LookupEnv | null;
}

/**
 * The commands stage: the profile's commands in order as timed stages, parallel groups over their
 * devices, each with its own log, telemetry file and kernel counts. After a failure the rest are
 * skipped unless the profile says continue-on-error.
 */
export class CommandsStage {
  readonly commands: CommandReport[] = [];
  failed: CommandReport | null = null;
  /** The commands' environment: the job's, the profile's env, and each cache's variable. */
  readonly env: NodeJS.ProcessEnv;
  readonly workdir: string;
  private readonly folders: KernelFolders;
  /** What the hook saw the commands' Triton cache lookups find, all commands together. */
  private readonly used = {
    folders: new Set<string>(),
    wrote: new Set<string>(),
    written: [] as KernelStats["wroteFiles"],
    complete: true,
    any: false,
  };
  /** The tripwire that catches a command clearing `$TRITON_CACHE_DIR/cache` (a folder Triton never uses). */
  private readonly trap: ClearTrap;
  /** Autotune results the commands tuned: entry folder -> the modules defining its kernel (salts). */
  private readonly tuned = new Map<string, string[]>();
  /** The hook's compile plan lines and device facts, all commands together (cache/plan/plan.ts checks them). */
  private readonly planLines = { plan: [] as unknown[], devices: [] as unknown[] };
  private recorded: RecordedPlan | undefined;
  /** Cache keys of the kernels the commands loaded and compiled (with names), for the CPU prewarm's report. */
  readonly kernelHashes = { loaded: new Set<string>(), compiled: new Map<string, string>() };

  constructor(
    private readonly ctx: JobContext,
    private readonly profile: ProfileSpec,
    private readonly place: CommandPlace,
  ) {
    this.env = { ...place.env, ...profile.env };
    for (const c of ctx.caches) {
      try {
        makeFolders(c.path);
      } catch (e) {
        // A file or a link loop where the folder should be, a read-only parent: the job's own
        // compiler meets it too; the job runs, and kcache says why its cache stays cold.
        ctx.log.warn(
          `${c.name}: the cache folder ${c.path} cannot be made (${(e as Error).message}); the job's commands run without a cache there`,
        );
      }
      if (c.env) this.env[c.env] = c.path;
    }
    this.workdir = profile.workdir ? path.resolve(place.cwd, profile.workdir) : place.cwd;
    this.trap = new ClearTrap(ctx.caches, ctx.log, ctx.autotune.policy);
    // Triton caches (or ones whose kind is detected later) are where compiles can be counted without a listener.
    this.folders = new KernelFolders(ctx.caches.filter(mayHoldKernels).map((c) => c.path));
  }

  async run(): Promise<Stage[]> {
    const stages: Stage[] = [];
    for (const item of this.profile.commands) {
      if (this.failed && !this.profile["continue-on-error"]) {
        stages.push({
          name: item.name,
          kind: "parallel" in item ? "group" : "command",
          seconds: 0,
          status: "skipped",
          summary: "not run: an earlier command failed",
        });
        continue;
      }
      if ("parallel" in item) stages.push(await this.runGroup(item));
      else stages.push(commandStage(await this.runOne(item, null, undefined)));
    }
    return stages;
  }

  private async runOne(
    cmd: CommandSpec,
    group: string | null,
    devices: string[] | undefined,
    prefix?: string,
  ) {
    const { outDir, echo } = this.place;
    const telemetryFile = path.join(outDir, "telemetry", `${cmd.name}.jsonl`);
    fs.rmSync(telemetryFile, { force: true });
    const devs = cmd.devices ?? devices;
    const env = telemetryEnv(
      { ...this.env, ...cmd.env, ...(devs ? deviceEnv(devs) : {}), ...(this.place.lookups ?? {}) },
      telemetryFile,
      this.ctx.autotune.policy,
    );
    const logFile = path.join(outDir, "logs", `${cmd.name}.log`);
    const before = group === null && this.folders.counting ? this.folders.before() : null;
    const ended = this.place.commandLog.started(cmd, devs, prefix !== undefined);
    if (group === null) this.trap.arm();
    const r = await runCommand({
      run: withSources(cmd.run, cmd.source ?? [], this.workdir),
      cwd: cmd.workdir ? path.resolve(this.workdir, cmd.workdir) : this.workdir,
      env,
      logFile,
      timeoutMs: cmd.timeout ? (parseDuration(cmd.timeout) as number) : undefined,
      echo,
      linePrefix: prefix,
    });
    ended?.();
    if (group === null) this.trap.disarm(cmd.name);
    const telemetry = readTelemetry(telemetryFile);
    this.noteUsage(telemetry);
    const report: CommandReport = {
      name: cmd.name,
      group,
      run: cmd.run,
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      seconds: r.seconds,
      log: logFile,
      devices: devs ? devs.join(",") : null,
      kernels: commandKernels(telemetry, before ? compiledBetween(before, this.folders.after()) : null),
      autotune: commandAutotune(telemetry.autotune, this.place.restoredAutotune),
    };
    this.commands.push(report);
    if (r.exitCode !== 0) {
      this.failed ??= report;
      this.ctx.log.warn(
        `${cmd.name} ${r.timedOut ? `timed out after ${cmd.timeout}` : `exited ${r.exitCode}`}; its output is in ${logFile}`,
      );
    }
    return report;
  }

  private noteUsage(t: KernelStats): void {
    for (const f of t.usedFolders) this.used.folders.add(f);
    for (const f of t.wroteFolders) this.used.wrote.add(f);
    for (const f of t.wroteFiles) this.used.written.push(f);
    for (const a of t.autotune) if (!a.hit) this.tuned.set(a.folder, t.autotuneModules[a.kernel] ?? []);
    for (const p of t.plan) if (this.planLines.plan.length < MAX_PLAN_LINES) this.planLines.plan.push(p);
    for (const d of t.devices) if (this.planLines.devices.length < 16) this.planLines.devices.push(d);
    for (const h of t.hashes.loaded) this.kernelHashes.loaded.add(h);
    for (const [h, name] of t.hashes.compiled) this.kernelHashes.compiled.set(h, name);
    if (t.status !== "no-triton") {
      this.used.any ||= t.usageComplete;
      this.used.complete &&= t.usageComplete;
    }
  }

  /**
   * The entry folders the commands' Triton processes found in the cache, for the save's record of
   * use: complete when every command that imported Triton had the hook's wrapper in.
   */
  hookUsage(): HookUsage {
    return {
      complete: this.used.any && this.used.complete,
      dirs: [...this.used.folders],
      wrote: [...this.used.wrote],
      written: this.used.written,
      tuned: [...this.tuned].map(([folder, modules]) => ({ folder, modules })),
      plan: this.plan(),
    };
  }

  /** The compile plan the commands' hook recorded, relative to the checkout they ran in (read once). */
  private plan(): RecordedPlan {
    this.recorded ??= recordedPlan(this.planLines.plan, this.planLines.devices, checkoutRoot(this.workdir));
    return this.recorded;
  }

  private async runGroup(group: GroupSpec): Promise<Stage> {
    const g0 = performance.now();
    const before = this.folders.counting ? this.folders.before() : null;
    const slots = group.devices ? group.devices.length : group.parallel.length;
    const children: Stage[] = new Array(group.parallel.length);
    // A pool of device slots: command i waits for a free device when there are more commands than devices.
    await inLanes(group.parallel, slots, async (cmd, slot, i) => {
      const devices = group.devices ? [group.devices[slot] as string] : undefined;
      children[i] = commandStage(await this.runOne(cmd, group.name, devices, `[${cmd.name}] `));
    });
    const failed = children.filter((c) => c.status === "failed").length;
    // Commands running at once share the cache folder: without their listeners, count the group as one.
    const members = this.commands.filter((c) => c.group === group.name);
    const folder =
      before && members.some((c) => c.kernels.status === "unavailable")
        ? compiledBetween(before, this.folders.after())
        : null;
    if (!folder) this.folders.forget();
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
}

/** The default CommandLog: one log line per command as it starts. */
export function plainCommandLog(log: Log): CommandLog {
  return {
    started(cmd, devices) {
      log.info(`${cmd.name}: ${cmd.run}${devices ? ` (devices ${devices.join(",")})` : ""}`);
      return undefined;
    },
  };
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
