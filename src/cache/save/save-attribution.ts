import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { formatBytes } from "../../format.js";
import { isTrustedScope } from "../../keys/scope.js";
import { type CacheFolder, entryFilePath } from "../../kinds/kind.js";
import type { JobContext } from "../job-context.js";
import type { JobRecord, LocalState } from "../local-state.js";
import { untrustedJobsSince } from "../persistent/live-jobs.js";
import type { FolderOwners } from "../persistent/shared-folder.js";
import type { HookUsage } from "../usage/save-usage.js";
import type { Tally } from "../usage/working-set.js";
import { leaveOutUnverified, type Present } from "./save-scan.js";

/**
 * A file system's clock ticks coarser than Date.now(), and a process's writes are stamped by its own
 * reading of the clock: a write this close before the job's restore began counts as made in the job.
 */
export const WINDOW_SLACK_MS = 2_000;

/** What a trusted save on folders other jobs may write did, as its report says it. */
export interface SharedFolderReport {
  /** The caches whose folder other jobs may write. */
  caches: string[];
  /** Whether kcache's hook was in the job (it recorded a write, or saw every Triton process): else nothing new there was attributable. */
  hook: boolean;
  /** New or changed entries the hook's record made the job's own: every file as one of its processes wrote it. */
  attributed: number;
}

type Found = {
  kept: Present[];
  reused: Present[];
  ours: LocalState | null;
  roots: CacheFolder[];
  hook?: HookUsage;
};

/**
 * The entries a save may upload as its job's own: of those the parent key does not vouch for, neither
 * what the folder held before the job, unchanged (save-scan.ts), nor what it cannot attribute to its
 * job on a folder other jobs may write (below). A changed entry left out is already dropped from the
 * parent's: its digest differs.
 */
export function jobsOwn(
  ctx: JobContext,
  found: Found,
  report: Parameters<typeof leaveOutUnverified>[2] & Parameters<typeof leaveOutUnattributed>[2],
): Present[] {
  return leaveOutUnattributed(ctx, { ...found, kept: leaveOutUnverified(ctx, found, report) }, report);
}

/**
 * The rule for a trusted save (the default branch's, a tag's) on a folder other jobs may write (a
 * persistent runner's, without isolate or trust-local: persistent/shared-folder.ts, decided by the
 * restore): it uploads only what it can attribute to its own job. Of the entries new or changed since
 * the restore's record (`job.seen`), an entry is the job's own only when every file of it is, byte for
 * byte, what one of the job's processes wrote through Triton's cache manager after the restore began
 * (the hook's record: file name and sha256 of the bytes written); an entry another process wrote or
 * changed since, or one of a kind the hook does not see (Inductor's, `dir`), is left out and counted
 * in `report.leftOut.otherJobs`. Entries the restored key vouches for (`reused`: byte for byte) and
 * entries unchanged since the restore stay, as they do anywhere. Nothing a process can set on the
 * folder (modification times, kcache's markers) moves an entry in; a process that forges the job's own
 * record (its telemetry file, its state) can, and only `isolate` keeps such a job away.
 *
 * A folder that was fresh at the restore (absent or empty) is the job's own, unless an untrusted job
 * (a pull request's, a build kcache could not place) left its marker there while this job ran.
 *
 * `roots`: the runner's folders, where the markers are (the job may work in a folder of its own).
 */
export function leaveOutUnattributed(
  ctx: JobContext,
  found: Found,
  report: { leftOut: { otherJobs: Tally }; sharedFolder: SharedFolderReport | null },
): Present[] {
  const { kept, reused, ours, roots, hook } = found;
  const job = ours?.job;
  if (!isTrustedScope(ctx.scopes.write)) return kept;
  // No record of this job's restore (none ran, or it was killed before it wrote one) on a runner the CI
  // says keeps its folders: nothing tells this job's entries from others', so only the key's stay.
  if (!job && ctx.runtime.persistent) return unrecorded(ctx, found, report);
  if (!job) return kept;
  const shared = sharedCaches(ctx.caches, roots, job);
  if (shared.size === 0) return kept;
  const written = writtenSince(hook, (job.startedAt - WINDOW_SLACK_MS) / 1000);
  const vouched = new Set(reused);
  const out: Present[] = [];
  const left = report.leftOut.otherJobs;
  let attributed = 0;
  let unseenKinds = 0;
  for (const p of kept) {
    const before = job.seen[p.cache]?.[p.entry.name];
    // In the folder as it was when the job began, and unchanged: the restore's rules hold for it.
    const newInOwnFolder = shared.get(p.cache) === LINKED && before === undefined;
    if (
      !shared.has(p.cache) ||
      vouched.has(p) ||
      newInOwnFolder ||
      (before !== undefined && before === p.sig)
    ) {
      out.push(p);
      continue;
    }
    if (p.kind.lookupsSeenByHook && writtenByJob(p, written)) {
      attributed++;
      out.push(p);
      continue;
    }
    if (!p.kind.lookupsSeenByHook) unseenKinds++;
    left.entries++;
    left.bytes += p.size;
  }
  const hookIn = written.size > 0 || hook?.complete === true;
  // A folder of the job's own is reported only where one of its entries changed through a link.
  const reported = [...shared].filter(([, why]) => why !== LINKED || left.entries > 0).map(([c]) => c);
  report.sharedFolder = reported.length ? { caches: reported, hook: hookIn, attributed } : null;
  const where = [...shared].map(([c, why]) => (why === "shared" ? c : `${c} (${why})`)).join(", ");
  if (left.entries)
    ctx.log.warn(
      `${where}: other jobs may write this runner's folder, so this save uploads only what it can attribute to its own job; left out ${left.entries} entries (${formatBytes(left.bytes)}) new or changed during the job that ${hookIn ? "kcache's hook did not record this job's processes writing as they are now" : "nothing recorded this job's processes writing (kcache's hook was not in the job)"}${unseenKinds ? ` (${unseenKinds} of a kind the hook does not see: Inductor's or dir)` : ""}; they compile again in the next job. To let them in: run the job under kcache run, or with kcache's hook (the action's restore step installs it; elsewhere PYTHONPATH=<kcache>/python/kcache_hook:$PYTHONPATH and KCACHE_TELEMETRY_FILE=${job.attribution?.telemetry ?? "<the file kcache restore names>"}), or declare that this runner runs only trusted jobs (trust-local: true); isolate: true gives each job a folder of its own`,
    );
  else if (attributed)
    ctx.log.info(
      `${where}: other jobs may write this runner's folder; the hook's record attributes all ${attributed} new entries to this job`,
    );
  return out;
}

/**
 * The caches whose folder other jobs may write, with why: as the restore decided (a record without
 * its decision, from a kcache before it, counts every folder not the job's own or declared trusted);
 * a fresh folder too once an untrusted job's marker says it used the runner's folder during this job.
 */
/** Why a folder of the job's own is attributed at all: its files are linked from the runner's. */
const LINKED = "a folder of the job's own, its files linked from the runner's";

function sharedCaches(caches: CacheFolder[], roots: CacheFolder[], job: JobRecord): Map<string, string> {
  const out = new Map<string, string>();
  const decided = job.attribution?.folders;
  for (const c of caches) {
    const owners = (typeof decided === "object" && decided !== null ? decided[c.name] : undefined) as
      | FolderOwners
      | undefined;
    if (owners === "shared") out.set(c.name, "shared");
    // A folder of the job's own (isolate) shares its files with the runner's by hard links: a process
    // writing a runner's file in place changes the job's entry too. Its new entries are the job's own;
    // an entry it held from the start that changed is attributed as on a shared folder.
    else if (owners === "own-folder" && job.folders[c.name]) out.set(c.name, LINKED);
    else if (owners === undefined && !c.trustLocal && !job.folders[c.name])
      out.set(c.name, "no record of whose it is");
    else if (owners === "fresh") {
      const root = roots.find((r) => r.name === c.name)?.path ?? c.path;
      const beside = untrustedJobsSince(root, job.startedAt - WINDOW_SLACK_MS, job.markers[c.name]).filter(
        (j) => !j.isolated,
      );
      if (beside.length) out.set(c.name, "fresh, but an untrusted job used it meanwhile");
    }
  }
  return out;
}

/** entry folder (its real path) -> file name -> the digests the job's processes wrote it with, since `since` (seconds). */
type Written = Map<string, Map<string, Set<string>>>;

function writtenSince(hook: HookUsage | undefined, since: number): Written {
  const out: Written = new Map();
  const real = new Map<string, string>();
  for (const w of hook?.written ?? []) {
    if (w.t === null || w.t < since) continue;
    let folder = real.get(w.folder);
    if (folder === undefined) {
      folder = realPath(w.folder);
      real.set(w.folder, folder);
    }
    const files = out.get(folder) ?? new Map<string, Set<string>>();
    const digests = files.get(w.file) ?? new Set<string>();
    digests.add(w.sha256);
    files.set(w.file, digests);
    out.set(folder, files);
  }
  return out;
}

/** Whether every file of the entry is, as it lies on disk now, a version the job's processes wrote. */
function writtenByJob(p: Present, written: Written): boolean {
  const files = written.get(realPath(path.join(p.root, p.entry.name)));
  if (!files || p.entry.files.length === 0) return false;
  return p.entry.files.every((f) => {
    const digests = files.get(f.rel);
    if (!digests) return false;
    const d = fileDigest(entryFilePath(p.root, p.entry, f.rel));
    return d !== null && digests.has(d);
  });
}

function realPath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

const NOATIME = fs.constants.O_NOATIME ?? 0;
let buffer: Buffer | undefined;

/**
 * sha256 of a regular file's bytes, read without moving its access time (unseen-read.ts) and never
 * through a link or a FIFO put in its place; null for anything else, or a file gone.
 */
function fileDigest(file: string): string | null {
  const flags = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
  let fd: number | undefined;
  try {
    try {
      fd = fs.openSync(file, flags | NOATIME);
    } catch (e) {
      if (!NOATIME || (e as NodeJS.ErrnoException).code !== "EPERM") throw e;
      fd = fs.openSync(file, flags);
    }
    if (!fs.fstatSync(fd).isFile()) return null;
    const h = createHash("sha256");
    buffer ??= Buffer.allocUnsafe(1 << 20);
    for (let n = fs.readSync(fd, buffer); n > 0; n = fs.readSync(fd, buffer)) h.update(buffer.subarray(0, n));
    return h.digest("hex");
  } catch {
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** A trusted save with no record of its restore on a persistent runner: entries the key vouches for, or a folder declared trusted. */
function unrecorded(
  ctx: JobContext,
  found: Found,
  report: { leftOut: { otherJobs: Tally }; sharedFolder: SharedFolderReport | null },
): Present[] {
  const vouched = new Set(found.reused);
  const trusted = new Set(ctx.caches.filter((c) => c.trustLocal).map((c) => c.name));
  const out = found.kept.filter((p) => vouched.has(p) || trusted.has(p.cache));
  const left = report.leftOut.otherJobs;
  for (const p of found.kept) {
    if (out.includes(p)) continue;
    left.entries++;
    left.bytes += p.size;
  }
  if (left.entries)
    ctx.log.warn(
      `no restore of this job recorded what the runner's folder held (none ran, or it was killed), and this runner keeps its folders between jobs: left out ${left.entries} entries (${formatBytes(left.bytes)}) nothing attributes to this job; run kcache restore (or kcache run) first, or declare the runner trusted (trust-local: true)`,
    );
  return out;
}
