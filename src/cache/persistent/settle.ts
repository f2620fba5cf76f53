import { formatBytes } from "../../format.js";
import { defaultBranchScope } from "../../keys/scope.js";
import type { CacheFolder, CacheKind, FoundEntry } from "../../kinds/kind.js";
import { folderKind } from "../cache-folder.js";
import { entrySignature } from "../entry-signature.js";
import type { JobContext } from "../job-context.js";
import { type JobRecord, type LocalState, readState } from "../local-state.js";
import type { HookUsage } from "../usage/save-usage.js";
import { hookUsedEntries, readSinceStamp } from "../usage/usage.js";
import { withFolderLock } from "./folder-lock.js";
import { unmarkJob } from "./live-jobs.js";
import { type MergeReport, mergeJobFolder } from "./merge.js";
import { removeWhole } from "./remove-whole.js";
import { type TrimReport, trimFolder } from "./trim.js";
import { recordUse } from "./use-record.js";

/** How a job ended, as the caller knows it. */
export interface JobEnd {
  /** Every command and check passed (a save only runs then). */
  passed: boolean;
  /** Why the job's folders may not be merged although it passed (save-always: it may have failed). */
  noMerge?: string;
  /** What the hook saw the job's Triton processes find in the cache (kcache run). */
  hook?: HookUsage;
}

export interface SettledFolder {
  name: string;
  /** The persistent folder. */
  path: string;
  /** The job's own folder (isolate), merged or discarded now; null when the job used the folder itself. */
  jobFolder: string | null;
  merged: MergeReport | null;
  /** Why the job's folder was discarded unmerged, or null. */
  discarded: string | null;
  trim: TrimReport | null;
}

/**
 * The end of a job on a persistent folder, after its save (or instead of it, when it failed): a job
 * folder (isolate) is merged back into the persistent one when the job passed in a trusted scope
 * (the default branch, a tag), else discarded; what the job used is recorded; its marker goes; and
 * a cache with max-size is trimmed. Local work only: nothing here touches the store.
 */
export async function settleFolders(
  ctx: JobContext,
  end: JobEnd,
  state: LocalState | null = readState(ctx.stateFile),
): Promise<SettledFolder[]> {
  const ours = state?.primaryKey === ctx.key && state.job ? state : null;
  const out: SettledFolder[] = [];
  for (const c of ctx.caches) {
    const job = ours?.job?.folders[c.name] ?? null;
    const settled: SettledFolder = {
      name: c.name,
      path: c.path,
      jobFolder: job,
      merged: null,
      discarded: null,
      trim: null,
    };
    out.push(settled);
    const kind = folderKind(job ? { ...c, path: job } : c) ?? folderKind(c);
    const used = kind && ours ? await usedByJob(ctx, { ...c, path: job ?? c.path }, kind, ours, end) : null;
    if (job) await mergeOrDiscard(ctx, { cache: c, job, kind, ours: ours as LocalState, end }, settled);
    if (kind && used)
      await withFolderLock(c.path, () =>
        recordUse(c.path, new Map([...used.names].map((n) => [n, used.at]))),
      );
    const marker = ours?.job?.markers[c.name];
    if (marker) unmarkJob(c.path, marker);
    if (kind && c.maxSize) settled.trim = await trimAfterJob(ctx, c, kind, ours, used?.names ?? null);
  }
  return out;
}

/** Whether a scope's jobs may put what they compiled where the default branch's jobs load it. */
export function mayMerge(ctx: JobContext): boolean {
  const scope = ctx.scopes.write;
  return scope === defaultBranchScope(ctx.scopes.defaultBranch) || scope.startsWith("tag/");
}

async function mergeOrDiscard(
  ctx: JobContext,
  {
    cache,
    job,
    kind,
    ours,
    end,
  }: { cache: CacheFolder; job: string; kind: CacheKind | null; ours: LocalState; end: JobEnd },
  settled: SettledFolder,
): Promise<void> {
  settled.discarded = !end.passed
    ? "the job did not pass"
    : (end.noMerge ??
      (mayMerge(ctx) ? null : `scope ${ctx.scopes.write} is not the default branch's or a tag's`));
  if (!settled.discarded && kind) {
    const entries = vouchedEntries(await kind.scan(job), kind, job, cache.name, ours);
    settled.merged = await withFolderLock(cache.path, () => mergeJobFolder(kind, job, cache.path, entries));
    ctx.log.info(
      `${cache.name}: merged this job's folder into ${cache.path}: ${settled.merged.merged} entries placed, ${settled.merged.same} already there${settled.merged.failed ? `, ${settled.merged.failed} failed` : ""} (${settled.merged.seconds.toFixed(2)} s)`,
    );
  } else if (settled.discarded)
    ctx.log.info(`${cache.name}: this job's folder is discarded (${settled.discarded})`);
  removeWhole(cache.path, job);
}

/** The complete entries of a job folder that were not there unchanged and unvouched before the job. */
function vouchedEntries(
  scan: { entries: FoundEntry[] },
  kind: CacheKind,
  root: string,
  cache: string,
  ours: LocalState,
): FoundEntry[] {
  const local = ours.job?.local[cache] ?? {};
  return scan.entries.filter(
    (e) => kind.incompleteReason(root, e) === null && local[e.name] !== entrySignature(e),
  );
}

/**
 * The entries the job used or made: new or changed since its restore, read since the restore stamped
 * them (where reads move access times), or seen by the hook. Where neither can tell, every entry.
 */
async function usedByJob(
  ctx: JobContext,
  work: CacheFolder,
  kind: CacheKind,
  ours: LocalState,
  end: JobEnd,
): Promise<{ names: Set<string>; at: number }> {
  const scan = await kind.scan(work.path);
  const job = ours.job as JobRecord;
  const atime = job.atime[work.name] === true;
  const hook = end.hook?.complete === true && kind.lookupsSeenByHook;
  const seen = end.hook ? hookUsedEntries([work], end.hook.dirs) : new Set<string>();
  const names = new Set<string>();
  for (const e of scan.entries) {
    const sig = entrySignature(e);
    const before = job.seen[work.name]?.[e.name];
    const known = atime || hook;
    if (before !== sig || !known || (atime && readSinceStamp(e)) || seen.has(`${work.name}/${e.name}`))
      names.add(e.name);
  }
  ctx.log.debug(`${work.name}: the job used or made ${names.size} of ${scan.entries.length} entries`);
  return { names, at: Date.now() };
}

async function trimAfterJob(
  ctx: JobContext,
  c: CacheFolder,
  kind: CacheKind,
  ours: LocalState | null,
  used: Set<string> | null,
): Promise<TrimReport> {
  const trim = await trimFolder(c, kind, {
    maxSize: c.maxSize ?? null,
    olderThanMs: null,
    dryRun: false,
    used: used ?? undefined,
    jobStart: ours?.job?.startedAt,
    key: keyEntriesOf(ours, c.name),
  });
  ctx.log.info(trimLine(trim));
  return trim;
}

/** The entries of the key the job restored: in its folder when it began, and not local. */
function keyEntriesOf(ours: LocalState | null, cache: string): Set<string> {
  const local = ours?.job?.local[cache] ?? {};
  return new Set(Object.keys(ours?.job?.seen[cache] ?? {}).filter((n) => !(n in local)));
}

/** One line for people: what a trim found, removed and spared. */
export function trimLine(t: TrimReport): string {
  if (t.skipped) return `${t.cache}: trim skipped: ${t.skipped}`;
  const spared = t.spared.usedByThisJob + t.spared.otherJobs;
  return `${t.cache}: ${t.dryRun ? "would trim" : "trimmed"} ${t.path} from ${t.before.entries} entries (${formatBytes(t.before.bytes)}) to ${t.after.entries} (${formatBytes(t.after.bytes)})${t.maxSize ? ` for max-size ${formatBytes(t.maxSize)}` : ""}: ${t.removed.entries} removed${spared ? `; spared ${t.spared.usedByThisJob} the job used and ${t.spared.otherJobs} other running jobs may read` : ""}`;
}
