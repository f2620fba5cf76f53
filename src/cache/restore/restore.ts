import { formatBytes } from "../../format.js";
import { primaryKey } from "../../keys/key.js";
import { isTrustedScope } from "../../keys/scope.js";
import type { CacheKind } from "../../kinds/kind.js";
import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef } from "../../manifest/manifest.js";
import { type FolderScans, withholdAutotune } from "../autotune/withhold.js";
import { StrictFaultError } from "../faults.js";
import type { JobContext } from "../job-context.js";
import { type DeferredEntries, deferredEntries, deferredTally } from "../lazy/deferred-entries.js";
import { wholeLines, wholeWords } from "../lazy/lazy-plan.js";
import { writeState } from "../local-state.js";
import { findExact, findManifest, type Match } from "../lookup.js";
import type { BuiltJobFolder } from "../persistent/job-folder.js";
import { type JobAttribution, jobTelemetryFile, whoseFolder } from "../persistent/shared-folder.js";
import { workingSetOf } from "../usage/working-set.js";
import { prepareFolders, type WorkingFolders } from "./restore-folders.js";
import { placeKey } from "./restore-place.js";
import type { RestoreReport } from "./restore-report.js";
import { stateAfterRestore } from "./restore-state.js";

export type { RestoreReport } from "./restore-report.js";

/**
 * Restores the best-matching manifest into the configured cache folders, wherever they are on this
 * runner, and never makes a folder colder than it was: every entry already there stays, and only the
 * key's entries that are absent or differ are written (verified, atomically; bad ones are skipped and
 * counted). Entries the key lacks stay for the job as local and unverified: a save never uploads
 * them as they are. Under `isolate`, all of this happens in a folder of the job's own.
 */
export async function restore(
  ctx: JobContext,
  opts: {
    lookupOnly?: boolean;
    /** The caller serves the job's lookups (kcache run, the action's restore step): `restore: lazy` caches may leave entries in the store. */
    servesLookups?: boolean;
  } = {},
): Promise<RestoreReport> {
  const t0 = performance.now();
  const lookupOnly = Boolean(opts.lookupOnly);
  const report = emptyReport(ctx, lookupOnly);
  const folders = await prepareFolders(ctx, lookupOnly);
  const work: JobContext = { ...ctx, caches: folders.caches };
  report.caches = folders.caches.map((c, i) => ({
    name: c.name,
    path: c.path,
    folder: ctx.caches[i]?.path ?? c.path,
    entries: 0,
    bytes: 0,
    shared: sharedOf(folders.built[c.name]),
  }));
  for (const { scan } of folders.scans.values()) report.entriesBefore += scan.entries.length;
  let match: Match | null = null;
  const placed: Placement = {
    keyEntries: [],
    borrowed: [],
    kinds: new Map(),
    sources: [],
    deferred: {},
    scans: new Map(),
  };
  try {
    match = await findManifest(ctx, report.faults);
    if (match) {
      report.matchedKey = match.key;
      report.matchedScope = match.scope;
      report.cacheHit = match.exact;
    }
    if (!lookupOnly) await placeAll(ctx, work, folders, match, report, placed, opts.servesLookups === true);
  } finally {
    // Whatever the store did, the state says what the folders hold and whose they are.
    await record(work, folders, lookupOnly ? null : match, placed, report);
  }
  report.seconds = (performance.now() - t0) / 1000;
  return lookupOnly ? report : finishRestore(ctx, report);
}

/** What a restore placed: the restored key's entries, those borrowed from other revisions' keys, and where each came from. */
interface Placement {
  keyEntries: EntryRef[];
  borrowed: EntryRef[];
  kinds: Map<string, CacheKind>;
  /** The keys placed from, the restored one first. */
  sources: Match[];
  /** Entries a lazy restore left in the store (cache/lazy/). */
  deferred: DeferredEntries;
  /** Each folder as the last look after placing found it (the state records it). */
  scans: FolderScans;
}

/**
 * Places the restored key, then the keys of the profile's other revisions (restore-revisions: both
 * sides of a HEAD-vs-BASE comparison warm), each adding only what the ones before lacked; then takes
 * back the autotune results the profile's policy does not give the job.
 */
async function placeAll(
  ctx: JobContext,
  work: JobContext,
  folders: WorkingFolders,
  match: Match | null,
  report: RestoreReport,
  placed: Placement,
  servesLookups: boolean,
): Promise<void> {
  const covered = new Set<string>();
  // Without a server of the job's lookups, lazy caches are restored whole (and that is said once).
  if (!servesLookups) sayRestoredWhole(work);
  const take = async (source: Match, into: EntryRef[]) => {
    const p = await placeKey(work, folders, source, report, { skip: covered, servesLookups });
    for (const [name, kind] of p.kinds) placed.kinds.set(name, kind);
    into.push(...p.restored, ...p.present);
    for (const e of [...p.restored, ...p.present, ...p.deferred]) covered.add(entryId(e));
    deferredEntries(ctx, source.manifest, p.deferred, placed.deferred);
    placed.sources.push(source);
  };
  if (match) {
    await take(match, placed.keyEntries);
    // actions/cache's cache-hit: the exact key, and every one of its entries now in place.
    const wanted = match.manifest.entries.filter((e) => placed.kinds.has(e.cache)).length;
    const deferred = deferredTally(placed.deferred);
    report.cacheHit = match.exact && placed.keyEntries.length + deferred.entries === wanted;
    if (report.lazy)
      Object.assign(report.lazy, { deferred: deferred.entries, deferredBytes: deferred.bytes });
    report.usage = { ...workingSetOf(match.manifest, new Set(placed.kinds.keys())), atime: null };
  }
  for (const other of await otherRevisions(ctx, report)) {
    if (other.key === match?.key) continue;
    const before = placed.borrowed.length;
    await take(other, placed.borrowed);
    report.otherKeys.push({ key: other.key, scope: other.scope, entries: placed.borrowed.length - before });
  }
  report.autotune = await withholdAutotune(work, placed.sources, placed.scans);
}

/** The keys of the profile's other revisions (exact keys, in this run's read scopes), those that exist. */
async function otherRevisions(ctx: JobContext, report: RestoreReport): Promise<Match[]> {
  const out: Match[] = [];
  for (const rev of ctx.autotune.otherRevisions) {
    const m = await findExact(ctx, primaryKey(ctx.prefix, ctx.stack.stackId, rev), report.faults);
    if (m) out.push(m);
    else
      ctx.log.info(
        `no key for revision ${rev.slice(0, 12)} (restore-revisions): its entries compile if the job needs them`,
      );
  }
  return out;
}

/** The state the save reads, written once, with what the folders hold now. */
async function record(
  work: JobContext,
  folders: WorkingFolders,
  parent: Match | null,
  placed: Placement,
  report: RestoreReport,
): Promise<void> {
  // A lookup-only restore placed and stamped nothing: a save after it must not read use from stamps.
  const r = await stateAfterRestore(work, {
    parent,
    keyEntries: placed.keyEntries,
    kinds: placed.kinds,
    stamp: !report.lookupOnly,
    scans: placed.scans,
  });
  const attribution = attributionOf(work, folders);
  r.state.job = {
    startedAt: folders.startedAt,
    markers: folders.markers,
    folders: folders.jobFolders,
    seen: r.seen,
    local: r.state.local ?? {},
    borrowed: signaturesOf(placed.borrowed, r.seen),
    atime: r.state.usage?.atime ?? {},
    autotune: report.autotune,
    ...(Object.keys(placed.deferred).length ? { deferred: placed.deferred } : {}),
    restored: {
      cacheHit: report.cacheHit,
      matchedKey: report.lookupOnly ? null : report.matchedKey,
      entries: report.entriesRestored,
      present: report.entriesPresent,
      bytes: report.bytesRestored,
      seconds: (Date.now() - folders.startedAt) / 1000,
      ...(wholeWords(report.lazy?.readWhole) ? { readWhole: report.lazy?.readWhole } : {}),
    },
    attribution,
  };
  writeState(work.stateFile, r.state, work.log);
  report.entriesLocal = r.local;
  if (report.matchedKey && !report.lookupOnly) report.usage.atime = r.atime;
}

/**
 * Whose each of the job's folders is (persistent/shared-folder.ts), and the file the job's hook is to
 * write. A trusted job on a folder others may write is told, once, what its save will upload.
 */
function attributionOf(work: JobContext, folders: WorkingFolders): JobAttribution {
  const out: JobAttribution = { folders: {}, telemetry: jobTelemetryFile(work.stateFile, work.jobPid) };
  for (const c of work.caches)
    out.folders[c.name] = whoseFolder(c, {
      ownFolder: folders.jobFolders[c.name] !== undefined,
      heldAnything: folders.held[c.name] !== false,
      ephemeral: work.runtime.ephemeral === true,
    });
  const shared = Object.keys(out.folders).filter((n) => out.folders[n] === "shared");
  if (shared.length && isTrustedScope(work.scopes.write))
    work.log.info(
      `${shared.join(", ")}: the runner's folder held entries before this job and other jobs may write it (no isolate or trust-local): this job's save uploads, of what is new or changed, only what kcache's hook records its processes writing (kcache run and the action install it; elsewhere PYTHONPATH=<kcache>/python/kcache_hook:$PYTHONPATH and KCACHE_TELEMETRY_FILE=${out.telemetry ?? "(the state folder cannot be written)"})`,
    );
  return out;
}

/** cache -> name -> signature of `entries`, as the restore's record of the folders has them. */
function signaturesOf(entries: EntryRef[], seen: Record<string, Record<string, string>>) {
  const out: Record<string, Record<string, string>> = {};
  for (const e of entries) {
    const sig = seen[e.cache]?.[e.name];
    if (!sig) continue;
    const cache = out[e.cache] ?? {};
    cache[e.name] = sig;
    out[e.cache] = cache;
  }
  return out;
}

function sharedOf(b: BuiltJobFolder | undefined): RestoreReport["caches"][number]["shared"] {
  return b ? { entries: b.entries, linked: b.linked, copied: b.copied, seconds: b.seconds } : null;
}

function emptyReport(ctx: JobContext, lookupOnly: boolean): RestoreReport {
  return {
    primaryKey: ctx.key,
    store: ctx.store.description,
    matchedKey: null,
    matchedScope: null,
    cacheHit: false,
    lookupOnly,
    entriesBefore: 0,
    entriesRestored: 0,
    entriesReplaced: 0,
    entriesPresent: 0,
    entriesLocal: 0,
    bytesRestored: 0,
    bytesDownloaded: 0,
    entriesBad: 0,
    membersRefused: 0,
    rewriter: { processes: 0, files: 0, seconds: 0 },
    otherKeys: [],
    autotune: null,
    lazy: null,
    faults: [],
    usage: { live: { entries: 0, bytes: 0 }, unused: { entries: 0, bytes: 0 }, atime: null },
    threads: 0,
    seconds: 0,
    caches: [],
  };
}

/** Says what the folders held and hold; under --strict, a store or data fault it names fails the restore (exit 3) once what was good is in place. */
function finishRestore(ctx: JobContext, report: RestoreReport): RestoreReport {
  ctx.log.info(folderLine(report));
  for (const line of wholeLines(report.lazy?.readWhole ?? {})) ctx.log.info(line);
  const failing = report.faults.filter((f) => ctx.strict.fails(f.code));
  const first = failing[0];
  if (first)
    throw new StrictFaultError(
      `restore met ${failing.length} store or data fault(s) (--strict): ${first.code}: ${first.message}`,
      first,
    );
  return report;
}

/** One line for people: what was there before, what the key added, and what is local and unverified. */
export function folderLine(r: RestoreReport): string {
  const added = r.matchedKey
    ? `${r.entriesPresent} already as ${r.matchedKey} has them, ${r.entriesRestored} added${r.entriesReplaced ? ` (${r.entriesReplaced} replacing ones that differed)` : ""}`
    : "nothing added (no key matched)";
  const lazy = r.lazy
    ? `; ${r.lazy.prefetched} fetched ahead as recent jobs used them, ${r.lazy.deferred} (${formatBytes(r.lazy.deferredBytes)}) left in the store until the job looks one up (restore: lazy)`
    : "";
  const local = r.entriesLocal
    ? `; ${r.entriesLocal} local and unverified (not in the key: the job uses them, a save never uploads them as they are)`
    : "";
  return `${r.entriesBefore} entries were in the cache folders; ${added}${lazy}${local}`;
}

/** Without `kcache run` or the action's restore step to serve the job's lookups, a lazy cache is restored whole. */
function sayRestoredWhole(ctx: JobContext): void {
  const lazy = ctx.caches.filter((c) => c.lazy).map((c) => c.name);
  if (lazy.length)
    ctx.log.info(
      `${lazy.join(", ")}: restore: lazy needs kcache run or the action's restore step, which serve the job's lookups while it runs; restored whole here`,
    );
  if (ctx.live)
    ctx.log.info(
      "store.live needs kcache run or the action's restore step, which share the job's kernels as it compiles them: nothing is shared live in this job",
    );
}
