import fs from "node:fs";
import path from "node:path";
import type { CacheKind, FoundEntry } from "../../kinds/kind.js";
import { entryFilePath } from "../../kinds/kind.js";
import { atimeRecordsReads, readSinceStamp } from "../usage/usage.js";
import type { Tally } from "../usage/working-set.js";
import { FolderBusyError, withFolderLock } from "./folder-lock.js";
import { liveJobs } from "./live-jobs.js";
import { removeWhole } from "./remove-whole.js";
import { planTrim, type TrimCandidate, type TrimPlan } from "./trim-plan.js";
import { readUse, recordUse } from "./use-record.js";

const CLOCK_SLACK_MS = 100;

/** What `kcache trim` (and the end of every job, for a cache with max-size) is asked to do. */
export interface TrimRequest {
  maxSize: number | null;
  /** Remove entries unused for this long, whatever the size. */
  olderThanMs: number | null;
  dryRun: boolean;
  /** Entries the job that just ended used: never removed. */
  used?: Set<string>;
  /** The job that just ended began here then: what was touched since is its own. */
  jobStart?: number;
  /** Entries of the key that job restored: removed only after every other (the next restore brings them back). */
  key?: Set<string>;
  /** That job's own marker, not another job's. */
  ownMarker?: string;
  now?: number;
}

export interface TrimReport {
  cache: string;
  path: string;
  dryRun: boolean;
  maxSize: number | null;
  before: Tally;
  removed: Tally;
  after: Tally;
  /** Entries the rules would have removed but that were spared, by why. */
  spared: { usedByThisJob: number; otherJobs: number };
  /** Why nothing was looked at (another kcache held the folder), else null. */
  skipped: string | null;
}

/**
 * Trims a persistent cache folder to `maxSize` bytes of entries (and of entries unused for
 * `olderThanMs`), least recently used first, as ccache's max_size and --evict-older-than do. Last
 * use is the latest of the entry's modification time, its access time where this folder records
 * reads (a restore stamps entries unread, so only a read moves it), and the folder's record of use
 * (use-record.ts). Never removed: an entry the job that just ended used or made, and an entry
 * touched since another job still using this folder began (its reads cannot be told apart, so
 * everything it may read is spared). Entries of the key just restored go last. Each entry is
 * renamed away whole, then deleted: a reader finds it whole or not at all.
 */
export async function trimFolder(
  cache: { name: string; path: string },
  kind: CacheKind,
  req: TrimRequest,
): Promise<TrimReport> {
  const root = cache.path;
  const report: TrimReport = {
    cache: cache.name,
    path: root,
    dryRun: req.dryRun,
    maxSize: req.maxSize,
    before: { entries: 0, bytes: 0 },
    removed: { entries: 0, bytes: 0 },
    after: { entries: 0, bytes: 0 },
    spared: { usedByThisJob: 0, otherJobs: 0 },
    skipped: null,
  };
  if (!fs.existsSync(root)) return report;
  try {
    await withFolderLock(root, async () => {
      const scan = await kind.scan(root);
      const plan = planTrim(candidates(root, scan.entries, req), req);
      Object.assign(report, {
        before: plan.before,
        removed: plan.removed,
        after: plan.after,
        spared: plan.spared,
      });
      if (req.dryRun) return;
      removeEntries(root, scan.entries, plan);
      recordUse(root, new Map(), new Set(scan.entries.map((e) => e.name).filter((n) => !plan.remove.has(n))));
    });
  } catch (e) {
    if (!(e instanceof FolderBusyError)) throw e;
    report.skipped = e.message;
  }
  return report;
}

/** Each entry with its size and what is known of its use. */
function candidates(root: string, entries: FoundEntry[], req: TrimRequest): TrimCandidate[] {
  const now = req.now ?? Date.now();
  const reads = atimeRecordsReads(root);
  const ledger = readUse(root);
  const others = liveJobs(root, req.ownMarker, now).filter((j) => !j.isolated);
  const oldestOther = others.length ? Math.min(...others.map((j) => j.startedAt)) : null;
  return entries.map((e) => {
    let mtime = 0;
    let touched = 0;
    for (const f of e.files) {
      mtime = Math.max(mtime, f.mtimeMs);
      touched = Math.max(touched, f.mtimeMs, f.atimeMs, ctimeOf(entryFilePath(root, e, f.rel)));
    }
    const read = reads && readSinceStamp(e) ? Math.max(...e.files.map((f) => f.atimeMs)) : 0;
    const lastUse = Math.max(mtime, read, ledger.get(e.name) ?? 0);
    return {
      name: e.name,
      size: e.files.reduce((n, f) => n + f.size, 0),
      lastUse,
      usedByThisJob:
        req.used?.has(e.name) === true || (req.jobStart !== undefined && lastUse >= req.jobStart),
      // A file system's clock ticks coarser than Date.now(): a touch just after a job began may read a little earlier.
      otherJobMayRead: oldestOther !== null && touched >= oldestOther - CLOCK_SLACK_MS,
      inKey: req.key?.has(e.name) === true,
    };
  });
}

function ctimeOf(p: string): number {
  try {
    return fs.statSync(p).ctimeMs;
  } catch {
    return 0;
  }
}

/** Removes each planned entry whole (renamed away first), and the folders of file entries it empties. */
function removeEntries(root: string, entries: FoundEntry[], plan: TrimPlan): void {
  for (const e of entries) {
    if (!plan.remove.has(e.name)) continue;
    removeWhole(root, path.join(root, e.name));
    for (let dir = path.posix.dirname(e.name); dir !== "."; dir = path.posix.dirname(dir)) {
      try {
        fs.rmdirSync(path.join(root, dir));
      } catch {
        break;
      }
    }
  }
}
