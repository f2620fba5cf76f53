import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { readBoundedFile } from "../bounded-file.js";
import type { CacheFolder } from "../kinds/kind.js";
import { createLog, type Log } from "../log.js";
import { makeFolders } from "../make-folders.js";
import type { Manifest } from "../manifest/manifest.js";
import {
  anyObject,
  arrayOf,
  bool,
  isObject,
  nullable,
  num,
  object,
  optional,
  recordOf,
  type Shape,
  str,
  tuple,
} from "../state-dir.js";
import type { AutotuneRestore } from "./autotune/withhold.js";
import { isIoFault } from "./faults.js";
import type { DeferredEntries } from "./lazy/deferred-entries.js";
import type { ReadWhole } from "./lazy/lazy-plan.js";
import type { JobAttribution } from "./persistent/shared-folder.js";

/**
 * What this machine remembers between `kcache restore` and `kcache save` of one workload: the key it
 * restored and the manifest that is the parent of the next save, plus each entry's stat signature
 * and digest, so a save re-reads only entries that changed.
 */
export interface LocalState {
  version: 1;
  primaryKey: string;
  /** The manifest restored or last saved, with where it came from. */
  parent: { key: string; scope: string; exact: boolean; manifest: Manifest } | null;
  /** cache name -> entry name -> [signature, sha256]. */
  index: Record<string, Record<string, [string, string]>>;
  /**
   * Left by a restore that stamped its entries' access times (cache/usage/usage.ts): per cache, whether
   * reads move access times there. A save reads use from atimes only where this says true.
   */
  usage?: { atime: Record<string, boolean> };
  /**
   * Left by a restore: the entries its folders held that the restored key lacks (local, unverified:
   * left by earlier jobs on this runner, a pull request's among them), cache -> name -> signature.
   * A save uploads none of them as they are, unless the cache trusts local entries.
   */
  local?: Record<string, Record<string, string>>;
  /** Left by a restore, and kept by the save: how the job began (cache/persistent/settle.ts ends it). */
  job?: JobRecord;
}

/** How a job began on its cache folders, for the end of the job to merge, record use and trim. */
export interface JobRecord {
  startedAt: number;
  /** cache -> this job's marker in the persistent folder (live-jobs.ts). */
  markers: Record<string, string>;
  /** cache -> the job's own folder (isolate). */
  folders: Record<string, string>;
  /** cache -> every entry its folder held once the restore was done -> its signature. */
  seen: Record<string, Record<string, string>>;
  /** cache -> those of them the restored key lacks (local, unverified) -> their signature. */
  local: Record<string, Record<string, string>>;
  /** cache -> whether reads move access times there (the restore stamped every entry unread). */
  atime: Record<string, boolean>;
  /** cache -> entries borrowed from other revisions' keys (restore-revisions) -> their signature: never saved under this key. */
  borrowed?: Record<string, Record<string, string>>;
  /** The autotune results the job was given and those withheld (docs/benchmarks.md). */
  autotune?: AutotuneRestore | null;
  /** What the restore did, for the save's run record (history/drop-in-record.ts). */
  restored?: RestoredOutcome;
  /** Entries a lazy restore left in the store: fetched when the job looks one up, carried over by the save. */
  deferred?: DeferredEntries;
  /** cache -> entries placed from other jobs' live objects (store.live): never saved under this job's key. */
  liveFetched?: Record<string, string[]>;
  /** Whose each folder is, and the job's hook record: what a trusted save may call the job's own (persistent/shared-folder.ts). */
  attribution?: JobAttribution;
}

/** A restore's outcome as the drop-in save's run record keeps it. */
export interface RestoredOutcome {
  /** The primary key matched (actions/cache's cache-hit). */
  cacheHit: boolean;
  /** The key restored; null when nothing was (a miss, or a lookup-only restore). */
  matchedKey: string | null;
  /** Entries written from the store, and entries already in the folder as the key has them. */
  entries: number;
  present: number;
  bytes: number;
  seconds: number;
  /** A lazy restore's packs read whole, by reason (absent when none were). */
  readWhole?: ReadWhole;
}

export { stateDir } from "../state-dir.js";

/**
 * The caches as this job uses them: where its restore made a folder of the job's own (isolate) that
 * is still there, that folder in place of the persistent one.
 */
export function jobCaches(caches: CacheFolder[], state: LocalState | null): CacheFolder[] {
  return caches.map((c) => {
    const own = state?.job?.folders[c.name];
    return own && fs.existsSync(own) ? { ...c, path: own } : c;
  });
}

/**
 * The job's context with its caches where this job's restore put them: as the restore's report says
 * (no state read), or, where the restore failed and left no report, as the local state for its key says.
 */
export function restoredContext<T extends { caches: CacheFolder[]; key: string; stateFile: string }>(
  ctx: T,
  report: { caches: { name: string; path: string }[] } | null,
  state?: LocalState | null,
): T {
  if (!report) return afterRestore(ctx, state);
  const at = new Map(report.caches.map((c) => [c.name, c.path]));
  return { ...ctx, caches: ctx.caches.map((c) => ({ ...c, path: at.get(c.name) ?? c.path })) };
}

/** The job's context with its caches where this job's restore (the local state for its key) put them. */
export function afterRestore<T extends { caches: CacheFolder[]; key: string; stateFile: string }>(
  ctx: T,
  state: LocalState | null = readState(ctx.stateFile),
): T {
  return state?.primaryKey === ctx.key ? { ...ctx, caches: jobCaches(ctx.caches, state) } : ctx;
}

/**
 * One state file per workload prefix, set of cache paths and scope the job writes. The scope keeps
 * jobs of different trust apart where they share a state folder (two CI jobs at once as one user,
 * outside GitHub's per-job RUNNER_TEMP): a pull request's restore never replaces the record a
 * default-branch job's save attributes its entries by.
 */
export function stateFile(dir: string, prefix: string, cachePaths: string[], scope: string): string {
  const id = createHash("sha256")
    .update(`${prefix}\0${cachePaths.join("\0")}\0${scope}`)
    .digest("hex")
    .slice(0, 16);
  return path.join(dir, `${prefix.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 60)}-${id}.json`);
}

/**
 * The most a state file may hold. A state is the parent manifest (~200 bytes an entry) and, per
 * entry, its signature and digest (index, ~150), its signature again (job.seen, job.local, ~170) and,
 * after a lazy restore, where it lies in the store (~250): under 1 kB an entry, so 256 MiB is a cache
 * of ~250,000 entries, far past any we have seen (FLA's chunk_kda key: 223). It also stays below
 * V8's longest string (~512 Mi characters), past which JSON.stringify could never have written it.
 */
const MAX_STATE_BYTES = 256 * 1024 * 1024;

/** States warned of in this process (each command reads the state several times). */
const warned = new Set<string>();

/**
 * The state a restore left in `file`, or null where there is none: null too where what lies there
 * is not a regular file (a FIFO, a link to /dev/zero), is larger than a state can be, does not parse,
 * or lacks the shape the restore, the job and the save read (LOCAL_STATE), with a warning naming it:
 * then the save goes on as after no restore (every digest computed again), never blocked or crashed.
 */
export function readState(file: string, log?: Pick<Log, "warn">): LocalState | null {
  const read = readBoundedFile(file, MAX_STATE_BYTES);
  if (!read) return null;
  let why: string;
  if ("bytes" in read) {
    let s: unknown;
    try {
      s = JSON.parse(read.bytes.toString("utf8"));
    } catch {
      s = undefined;
    }
    // Another version of the state (a later kcache's): not ours to read, and nothing to warn of.
    const version = isObject(s) ? s.version : undefined;
    if (typeof version === "number" && version !== 1) return null;
    if (LOCAL_STATE(s)) return s as LocalState;
    why = s === undefined ? "it does not parse" : "it lacks the fields a restore writes";
  } else why = read.refused;
  if (!warned.has(file)) {
    warned.add(file);
    (log ?? createLog()).warn(
      `local state ${file} ignored: ${why}; this job's save goes on as after no restore (remove the file)`,
    );
  }
  return null;
}

const names = recordOf(str);
const perCache = recordOf(names);
/** What a state must hold for its readers, by type (LocalState and JobRecord say what each field means). */
const LOCAL_STATE: Shape = object({
  version: (v) => v === 1,
  primaryKey: str,
  parent: nullable(
    object({
      key: str,
      scope: str,
      exact: bool,
      manifest: object({
        key: str,
        caches: arrayOf(object({ name: str, kind: str })),
        packs: arrayOf(object({ object: str, sha256: str, size: num })),
        entries: arrayOf(object({ cache: str, name: str, sha256: str, size: num, pack: num })),
      }),
    }),
  ),
  index: recordOf(recordOf(tuple(str, str))),
  usage: optional(object({ atime: recordOf(bool) })),
  local: optional(perCache),
  job: optional(
    object({
      startedAt: num,
      markers: names,
      folders: names,
      seen: perCache,
      local: perCache,
      atime: recordOf(bool),
      borrowed: optional(perCache),
      autotune: optional(nullable(object({ given: arrayOf(anyObject), withheld: arrayOf(anyObject) }))),
      restored: optional(anyObject),
      deferred: optional(
        recordOf(
          recordOf(object({ object: str, frame: tuple(num, num), sha256: str, size: num, files: num })),
        ),
      ),
      liveFetched: optional(recordOf(arrayOf(str))),
    }),
  ),
});

/** Writes the state atomically (temp + rename). */
export function writeState(file: string, state: LocalState, log: Log): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    makeFolders(path.dirname(file));
    fs.writeFileSync(tmp, JSON.stringify(state));
    fs.renameSync(tmp, file);
  } catch (e) {
    if (!isIoFault(e)) throw e;
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      // its folder cannot be made or read either
    }
    // The state only saves the next command work (what a restore placed, what a save uploaded): the
    // restore or save it records is done, and is reported as done; without it the next save treats
    // this folder's entries as local and unverified, which uploads less, never more.
    log.warn(
      `the local state ${file} cannot be written (${(e as Error).message}); the next save treats this folder's entries as unverified (set KCACHE_STATE_DIR to a folder this job can write)`,
    );
  }
}

/**
 * The state a save leaves: the key it saved (or found) as the parent, each saved entry's signature
 * and digest, and the record of how the job began (`job`), which the end of the job still needs.
 */
export function stateAfterSave(
  key: string,
  parent: LocalState["parent"],
  saved: { cache: string; entry: { name: string }; sig: string; digest: string | null }[],
  job?: JobRecord,
): LocalState {
  const index: LocalState["index"] = {};
  for (const p of saved) {
    if (!p.digest) continue;
    const idx = index[p.cache] ?? {};
    idx[p.entry.name] = [p.sig, p.digest];
    index[p.cache] = idx;
  }
  return { version: 1, primaryKey: key, parent, index, ...(job ? { job } : {}) };
}
