import fs from "node:fs";
import path from "node:path";
import { isTrustedScope } from "../../keys/scope.js";
import type { CacheFolder, CacheKind, ScanResult } from "../../kinds/kind.js";
import { ownerOf, pidNamespace } from "../../pack/read/staging-owner.js";
import { folderKind, scanFolder } from "../cache-folder.js";
import type { JobContext } from "../job-context.js";
import { type LocalState, readState } from "../local-state.js";
import { bringBackAside } from "../persistent/aside.js";
import { FolderBusyError, withFolderLock } from "../persistent/folder-lock.js";
import {
  type BuiltJobFolder,
  buildJobFolder,
  JOB_FOLDER,
  removeStaleJobFolders,
} from "../persistent/job-folder.js";
import { LIVE_JOB, markJob } from "../persistent/live-jobs.js";
import { removeWhole } from "../persistent/remove-whole.js";
import { removeStaleStaging } from "./restore-state.js";

/**
 * The folders a job works in, made ready before anything is looked up, so that neither a store that
 * is down nor a miss changes what the job runs against: leftovers of killed kcache processes and
 * jobs removed, entries an older kcache set aside brought back, the job marked as using each folder,
 * and for `isolate: true` a folder of the job's own built from the persistent one. A lookup-only
 * restore changes nothing: it only reads what the folders hold.
 */
export interface WorkingFolders {
  /** The caches as the job uses them: a job folder in place of the persistent one where isolated. */
  caches: CacheFolder[];
  /** cache name -> the job's own folder (isolate). */
  jobFolders: Record<string, string>;
  /** cache name -> how that folder was made. */
  built: Record<string, BuiltJobFolder>;
  /** cache name -> this job's marker in the persistent folder. */
  markers: Record<string, string>;
  startedAt: number;
  /** What each working folder held before the restore wrote anything (folders of a known kind). */
  scans: Map<string, { kind: CacheKind; scan: ScanResult }>;
  /** The local state as the restore found it: read once, here. */
  state: LocalState | null;
}

export async function prepareFolders(ctx: JobContext, lookupOnly: boolean): Promise<WorkingFolders> {
  const out: WorkingFolders = {
    caches: [],
    jobFolders: {},
    built: {},
    markers: {},
    startedAt: Date.now(),
    scans: new Map(),
    state: readState(ctx.stateFile),
  };
  for (const c of ctx.caches) {
    if (lookupOnly) {
      // Only looked: the folders are left exactly as they are, and only read.
      const kind = folderKind(c);
      out.caches.push(c);
      if (kind) out.scans.set(c.name, { kind, scan: await scanFolder(c, kind) });
      continue;
    }
    removeStaleStaging(c.path);
    removeStaleJobFolders(c.path);
    supersedeOwn(c.path, ctx.jobPid);
    const kind = folderKind(c);
    if (kind) {
      const back = await bringBackAside(kind, c.path);
      if (back)
        ctx.log.info(`${c.name}: ${back} entries an older kcache had set aside are back in ${c.path}`);
    }
    // A folder that is not there yet holds nothing another job's trim could take: it is left
    // uncreated (a restore that finds nothing touches nothing), unless the job needs a folder of its own.
    const own = c.isolate === true || (await holdsUnvouchedWinners(ctx, c, kind));
    // An untrusted job always says it is here: whatever it compiles into the folder, a trusted job
    // beside it must not take for its own (save/save-attribution.ts).
    const trusted = isTrustedScope(ctx.scopes.write);
    if (own || !trusted || fs.existsSync(c.path))
      out.markers[c.name] = markJob(c.path, ctx.jobPid, { isolated: own, trusted }, out.startedAt);
    const built = own ? await jobFolder(ctx, c, kind) : null;
    const work = built ? { ...c, path: built.path } : c;
    if (built) {
      out.jobFolders[c.name] = built.path;
      out.built[c.name] = built;
    }
    out.caches.push(work);
    if (kind) out.scans.set(c.name, { kind, scan: await scanFolder(work, kind) });
  }
  return out;
}

/**
 * Whether a profile that is given only some autotune results (`pinned`, `fresh`) finds some in a
 * folder kept between jobs: their producers are unknown, and taking them out of the runner's folder
 * would make it colder, so the job gets a folder of its own without them (docs/benchmarks.md).
 */
async function holdsUnvouchedWinners(
  ctx: JobContext,
  c: CacheFolder,
  kind: CacheKind | null,
): Promise<boolean> {
  if (ctx.autotune.policy === "any" || !kind) return false;
  const found = (await kind.scan(c.path)).entries.some((e) => kind.isAutotuneResult(e));
  if (found)
    ctx.log.info(
      `${c.name}: ${c.path} holds autotune results of unknown producers; under autotune: ${ctx.autotune.policy} this job works in a folder of its own without them`,
    );
  return found;
}

/**
 * Removes the job folders and markers an earlier restore of this same job left (a second restore in
 * one job supersedes the first): same namespace, same job process.
 */
function supersedeOwn(root: string, jobPid: number): void {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return;
  }
  for (const n of names)
    for (const prefix of [JOB_FOLDER.prefix, LIVE_JOB.prefix]) {
      const owner = ownerOf(prefix, n);
      if (owner?.where === pidNamespace() && owner.pid === jobPid) removeWhole(root, path.join(root, n));
    }
}

/**
 * The job's own folder for an isolated cache: the persistent folder's entries linked in, under the
 * folder's lock (a trim or merge meanwhile would take entries from under the links). When the lock
 * is not to be had or the build fails, an empty folder of the job's own: colder, never shared.
 */
async function jobFolder(ctx: JobContext, c: CacheFolder, kind: CacheKind | null): Promise<BuiltJobFolder> {
  try {
    const built = await withFolderLock(c.path, () => buildJobFolder(kind, c.path, ctx.jobPid));
    ctx.log.info(
      `${c.name}: this job works in ${built.path} (isolate): ${built.entries} entries of ${c.path} shared (${built.linked} files linked, ${built.copied} copied) in ${built.seconds.toFixed(2)} s`,
    );
    return built;
  } catch (e) {
    const why = e instanceof FolderBusyError ? e.message : (e as Error).message;
    const empty = await buildJobFolder(null, c.path, ctx.jobPid);
    ctx.log.warn(
      `${c.name}: could not share ${c.path} with this job (${why}); it works in an empty folder of its own`,
    );
    return empty;
  }
}
