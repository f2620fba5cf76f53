import fs from "node:fs";
import path from "node:path";
import { isTrustedScope } from "../../keys/scope.js";
import type { CacheFolder, CacheKind, ScanResult } from "../../kinds/kind.js";
import { ownerOf, pidNamespace, stagingIsStale } from "../../pack/read/staging-owner.js";
import { folderKind, scanFolder } from "../cache-folder.js";
import type { JobContext } from "../job-context.js";
import { bringBackAside } from "./aside.js";
import { FolderBusyError, withFolderLock } from "./folder-lock.js";
import { type BuiltJobFolder, buildJobFolder, JOB_FOLDER, removeStaleJobFolders } from "./job-folder.js";
import { LIVE_JOB, markJob } from "./live-jobs.js";
import { removeWhole } from "./remove-whole.js";
import { holdsAnything } from "./shared-folder.js";

/** A cache folder as a job works in it, opened before anything is looked up. */
export interface OpenedFolder {
  /** The cache as the job uses it: a folder of the job's own in place of the runner's where isolated. */
  cache: CacheFolder;
  kind: CacheKind | null;
  /** This job's marker in the runner's folder, when it set one. */
  marker: string | null;
  /** How the job's own folder was made (isolate, or winners of unknown producers). */
  built: BuiltJobFolder | null;
  /** What the folder the job works in held before the restore wrote anything (a folder of a known kind). */
  scan: ScanResult | null;
  /** Whether the runner's folder held anything at all when the restore began (shared-folder.ts: else it is fresh). */
  heldAnything: boolean;
}

/**
 * The one owner of a cache folder that outlives jobs (a persistent runner's, or any runner's): what a
 * job does to it before it looks anything up, in order. Leftovers of killed kcache processes and jobs
 * (staging, job folders) and of this job's own earlier restore are removed; entries an older kcache
 * set aside are brought back; the job is marked as using the folder (an untrusted job always, so a
 * trusted job beside it never takes what it compiles for its own); and under `isolate: true`, or when
 * the folder holds autotune winners the profile may not be given, the job gets a folder of its own
 * built from it. A folder that is not there yet is left uncreated unless the job needs one.
 */
export async function openRunnerFolder(
  ctx: JobContext,
  c: CacheFolder,
  startedAt: number,
): Promise<OpenedFolder> {
  // Before kcache itself changes anything there (its own leftovers, this job's marker).
  const heldAnything = holdsAnything(c.path);
  removeStaleStaging(c.path);
  removeStaleJobFolders(c.path);
  supersedeOwn(c.path, ctx.jobPid);
  const kind = folderKind(c);
  if (kind) {
    const back = await bringBackAside(kind, c.path);
    if (back) ctx.log.info(`${c.name}: ${back} entries an older kcache had set aside are back in ${c.path}`);
  }
  const own = c.isolate === true || (await holdsUnvouchedWinners(ctx, c, kind));
  const trusted = isTrustedScope(ctx.scopes.write);
  const marker =
    own || !trusted || fs.existsSync(c.path)
      ? markJob(c.path, ctx.jobPid, { isolated: own, trusted }, startedAt)
      : null;
  const built = own ? await jobFolder(ctx, c, kind) : null;
  const cache = built ? { ...c, path: built.path } : c;
  return { cache, kind, marker, built, scan: kind ? await scanFolder(cache, kind) : null, heldAnything };
}

/** A cache folder only looked at (a lookup-only restore): left exactly as it is, and only read. */
export async function lookAtFolder(c: CacheFolder): Promise<OpenedFolder> {
  const kind = folderKind(c);
  const heldAnything = holdsAnything(c.path);
  return {
    cache: c,
    kind,
    marker: null,
    built: null,
    scan: kind ? await scanFolder(c, kind) : null,
    heldAnything,
  };
}

/** Removes staging folders no live restore owns (staging-owner.ts says when that is known). */
function removeStaleStaging(root: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return;
  }
  for (const n of names)
    if (stagingIsStale(root, n)) fs.rmSync(path.join(root, n), { recursive: true, force: true });
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
