import type { CommandAutotune } from "../cache/autotune/symmetry.js";
import type { Fault } from "../cache/faults.js";
import type { LazyReport } from "../cache/lazy/job-lookups.js";
import type { SettledFolder } from "../cache/persistent/settle.js";
import type { RestoreReport } from "../cache/restore/restore.js";
import type { SaveReport } from "../cache/save/save.js";
import type { SaveOptions } from "../cache/usage/save-usage.js";
import type { CheckResult } from "../checks/check.js";
import type { CommandSpec } from "../config/profile-schema.js";
import type { Job } from "../job/build-job.js";
import type { FolderCount } from "../telemetry/folder-count.js";
import type { GraphCacheCounts, KernelStats } from "../telemetry/read.js";
import type { AheadReport } from "./cpu-prewarm/ahead-report.js";

/**
 * What `kcache run` reports (kcache-report.json, schema kcache-run-report/1) and what it is given:
 * the stages in order, each command's exit and kernels, the checks, and the save or why there was none.
 */
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
/** A command's kernels as reported: the hook's compile plan, device facts and cache keys stay out (the save and the CPU prewarm's line read them; the report would grow by a line per kernel). */
export interface CommandKernels
  extends Omit<KernelStats, "loaded" | "compileSeconds" | "plan" | "devices" | "hashes"> {
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
  /** Which kernels ran on a winner the job was given (from whom) and which were tuned here (why); null without autotune lookups. */
  autotune: CommandAutotune | null;
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
  /**
   * A lazy restore's entries and the job's lookups of them (restore: lazy): fetched ahead, fetched
   * when looked up, never needed; bytes read and time waited. Null when nothing was left in the store.
   */
  lazy: LazyReport | null;
  commands: CommandReport[];
  checks: CheckResult[];
  save: SaveReport | null;
  /** Every store and data fault the run's restore and save met, coded (docs/cli.md#faults). */
  faults: Fault[];
  /** Why nothing was saved, when the gate or the policy held the save back. */
  saveSkipped: string | null;
  /**
   * What the end of the job did to each cache folder: the job's own folder (isolate) merged back or
   * discarded, and the trim to max-size (docs/self-hosted.md).
   */
  folders: SettledFolder[];
  kernels: {
    status: KernelStats["status"];
    source: CommandKernels["source"];
    loaded: number | null;
    compiled: number;
    compileSeconds: number | null;
    /** torch.compile's FX graph and AOTAutograd cache hits and misses over the run; null when nothing compiled a graph. */
    graphs: GraphCacheCounts | null;
  };
  /** Set when `expect: warm` saw kernels compiled after an exact-key restore. */
  unexpectedCompile: string | null;
  /** What the CPU prewarm of the restored key compiled ahead, and what this job still compiled (absent: none ran). */
  cpuPrewarm?: AheadReport | null;
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
  /** Whether the save may evict entries the job did not use (cache/usage/save-usage.ts; default "yes"). */
  evict?: SaveOptions["evict"];
  /** Echo command output (default: stdout). */
  echo?: NodeJS.WritableStream | null;
  /** Write a run record to the store (default true; compare's rounds write none). */
  record?: boolean;
  /** Says each command as it starts (default: a log line; under GitHub Actions github/ folds its output). */
  commandLog?: CommandLog;
}

/**
 * How a run says its commands start and end. The default writes a log line; github/command-groups.ts
 * folds each command's output into a `::group::` of the job's log.
 */
export interface CommandLog {
  /** A command starts; `inGroup` when it runs beside others (its lines are prefixed). Returns what to do when it ends. */
  started(cmd: CommandSpec, devices: string[] | undefined, inGroup: boolean): (() => void) | undefined;
}
