import type { RuntimeSettings } from "../environment.js";
import type { ScopePlan } from "../keys/scope.js";
import type { CacheFolder } from "../kinds/kind.js";
import type { Log } from "../log.js";
import type { Progress } from "../progress.js";
import type { ReadOnlyMode } from "../store/read-only.js";
import type { Store } from "../store/store.js";
import type { AutotuneSettings } from "./autotune/settings.js";
import type { Strictness } from "./faults.js";

/** How saves pack and when they consolidate (kcache.yml's `save:`). */
export interface SaveSettings {
  maxChain: number;
  maxDeadShare: number;
  packBytes: number;
  compressionLevel: number;
  /** save.keep-unused: drop an entry unused for this many saves in a row, or this many days (0: rule off). */
  keepUnusedRuns: number;
  keepUnusedDays: number;
  /** save.max-bytes: the most bytes a key holds, least recently used dropped first (null: no cap). */
  maxBytes: number | null;
}

/**
 * Everything a restore or save of one workload needs to know, worked out once by src/job/ from the
 * configuration and the overrides (the CLI's flags, the action's inputs). Nothing here reads kcache.yml.
 */
export interface JobContext {
  caches: CacheFolder[];
  /** The workload's key prefix (kcache.yml's key.prefix, the profile's prefix, or the action's key). */
  prefix: string;
  /** Fallback key prefixes after the stack prefix, in order (key.restore-prefixes, restore-keys). */
  restorePrefixes: string[];
  save: SaveSettings;
  store: Store;
  /**
   * Read-only mode (store/read-only.ts): why this job writes nothing to the store, once it is so
   * (declared, or a write the store forbade); `store` refuses every write meanwhile.
   */
  readOnly: ReadOnlyMode;
  /** store.live: entries the job compiles are shared at once, and looked up by other jobs (cache/lazy/live-writer.ts). */
  live: boolean;
  stack: { stackId: string; components: Record<string, string> };
  /** Which autotune results the job is given and who its own are recorded as produced by (docs/benchmarks.md). */
  autotune: AutotuneSettings;
  revision: string;
  scopes: ScopePlan;
  /** `<prefix>-<stackId>-<revision>` */
  key: string;
  /** `<prefix>-<stackId>-` */
  stackKeyPrefix: string;
  stateFile: string;
  /**
   * The process that lasts as long as the CI job (process/job-anchor.ts): a persistent folder's job
   * folders and live-job markers are named for it, so a later restore can tell when the job is gone.
   */
  jobPid: number;
  log: Log;
  /** --strict: which store and data faults fail the command (exit 3) instead of warning. */
  strict: Strictness;
  /** Threads and the Zstandard engine ($KCACHE_THREADS, $KCACHE_ZSTD), read from the environment once. */
  runtime: RuntimeSettings;
  /** Shows a transfer's progress (the CLI's bar or log lines); none in library use. */
  progress?: (label: string, totalBytes: number | null) => Progress;
}
