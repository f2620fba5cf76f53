import type { AutotuneRestore } from "../autotune/withhold.js";
import type { Fault } from "../faults.js";
import type { ReadWhole } from "../lazy/lazy-plan.js";
import type { WorkingSet } from "../usage/working-set.js";

/** What a restore did, for people (the CLI's lines, the action's log) and programs (--json, kcache-report.json). */
export interface RestoreReport {
  primaryKey: string;
  /** The store looked in, as a person reads it ("GitHub Actions cache", "local store /path"). */
  store: string;
  matchedKey: string | null;
  matchedScope: string | null;
  /** The primary key matched exactly (actions/cache's cache-hit). */
  cacheHit: boolean;
  lookupOnly: boolean;
  /** Entries the folders held before the restore wrote anything (a persistent runner's warm cache). */
  entriesBefore: number;
  entriesRestored: number;
  /** Of those, entries that replaced a different entry of the same name (the key's verified one won). */
  entriesReplaced: number;
  /** Entries already in the cache folder, byte for byte as in the manifest (a runner that keeps its cache): not downloaded. */
  entriesPresent: number;
  /**
   * Entries in the folders that the restored key lacks (all of them on a miss): kept for the job, and
   * never uploaded as they are, since nothing vouches for them (unless the cache trusts local entries).
   */
  entriesLocal: number;
  bytesRestored: number;
  /** Compressed bytes read from the store. */
  bytesDownloaded: number;
  /** Entries skipped because they failed verification or their pack could not be read. */
  entriesBad: number;
  /** Pack members refused as unsafe. */
  membersRefused: number;
  /** torch.compile's pickles rewritten for this folder: one Python process per pack that held some. */
  rewriter: { processes: number; files: number; seconds: number };
  /**
   * Keys of the profile's other revisions (restore-revisions) placed after the restored one, each
   * with the entries it added: borrowed for the job, never saved under this key.
   */
  otherKeys: { key: string; scope: string; entries: number }[];
  /** The autotune results the job was given and those the profile's policy withheld (docs/benchmarks.md). */
  autotune: AutotuneRestore | null;
  /** Store and data faults met, coded (faults.ts); --strict fails on those it names. */
  faults: Fault[];
  /**
   * The restored key's working set: entries a job used at its save, and entries it carried unused
   * (eviction drops them once unused long enough); `atime` whether this folder records reads (null: nothing restored).
   */
  usage: WorkingSet & { atime: boolean | null };
  /**
   * A lazy restore (restore: lazy): entries placed before the job by ranged reads of their frames
   * (those recent jobs used), and entries left in the store for the job's lookups, with their bytes;
   * `readWhole`, the packs read whole as an eager restore reads them, by reason (lazy-plan.ts).
   * Null where no cache was restored lazily.
   */
  lazy: { prefetched: number; deferred: number; deferredBytes: number; readWhole: ReadWhole } | null;
  /** Worker threads that read packs (0: read in the main thread). */
  threads: number;
  seconds: number;
  /**
   * Per cache: where the job uses it (`path`: a folder of the job's own under `isolate`, else the
   * cache's folder), the persistent folder it belongs to, and what the restore placed there.
   */
  caches: {
    name: string;
    path: string;
    folder: string;
    entries: number;
    bytes: number;
    /** How the job's own folder was made (isolate): entries shared, files linked and copied, seconds; null otherwise. */
    shared: { entries: number; linked: number; copied: number; seconds: number } | null;
  }[];
}
