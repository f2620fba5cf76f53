import fs from "node:fs";
import { performance } from "node:perf_hooks";
import type { CacheFolder, ScanResult } from "../kinds/kind.js";
import { cacheKind } from "../kinds/registry.js";
import { entryId } from "../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../manifest/manifest.js";
import type { RestoreTarget } from "../pack/pack-request.js";
import { heartbeat, makeStaging } from "../pack/read/staging-owner.js";
import { zstdEngine } from "../pack/zstd/engines.js";
import { folderKind, scanFolder } from "./cache-folder.js";
import { diskFaultIn, type Fault, fault, StrictFaultError } from "./faults.js";
import type { JobContext } from "./job-context.js";
import { forgetUsage, writeState } from "./local-state.js";
import { findManifest, type Match } from "./lookup.js";
import { moveAsideUnlisted } from "./reconcile.js";
import { type PackOutcome, readPacks } from "./restore-packs.js";
import { presentEntries, removeStaleStaging, stateAfterRestore, verifiedOnDisk } from "./restore-state.js";
import { type WorkingSet, workingSetOf } from "./working-set.js";

export interface RestoreReport {
  primaryKey: string;
  /** The store looked in, as a person reads it ("GitHub Actions cache", "local store /path"). */
  store: string;
  matchedKey: string | null;
  matchedScope: string | null;
  /** The primary key matched exactly (actions/cache's cache-hit). */
  cacheHit: boolean;
  lookupOnly: boolean;
  entriesRestored: number;
  /** Entries already in the cache folder, byte for byte as in the manifest (a runner that keeps its cache): not downloaded. */
  entriesPresent: number;
  bytesRestored: number;
  /** Compressed bytes read from the store. */
  bytesDownloaded: number;
  /** Entries skipped because they failed verification or their pack could not be read. */
  entriesBad: number;
  /** Pack members refused as unsafe. */
  membersRefused: number;
  /** Entries found in the cache folder that the restored key lacks, moved to `<path>/.kcache-aside`. */
  entriesMovedAside: number;
  /** Store and data faults met, coded (faults.ts); --strict fails on those it names. */
  faults: Fault[];
  /**
   * The restored key's working set: entries a job used at its save, and entries it carried unused
   * (eviction drops them once unused long enough); `atime` whether this folder records reads (null: nothing restored).
   */
  usage: WorkingSet & { atime: boolean | null };
  /** Worker threads that read packs (0: read in the main thread). */
  threads: number;
  seconds: number;
  caches: { name: string; path: string; entries: number; bytes: number }[];
}

/** The folders a manifest's caches restore into, each with its kind and a private staging folder. */
interface Targets {
  targets: Map<string, RestoreTarget>;
  folders: Map<string, CacheFolder>;
}

/**
 * Restores the best-matching manifest into the configured cache paths, wherever they are on this
 * runner. Verified entries land atomically; bad ones are skipped and counted, never written.
 */
export async function restore(ctx: JobContext, opts: { lookupOnly?: boolean } = {}): Promise<RestoreReport> {
  const t0 = performance.now();
  const report = emptyReport(ctx, Boolean(opts.lookupOnly));
  const finish = () => {
    report.seconds = (performance.now() - t0) / 1000;
    return opts.lookupOnly ? report : finishRestore(ctx, report);
  };
  const match = await findManifest(ctx, report.faults);
  if (match) {
    report.matchedKey = match.key;
    report.matchedScope = match.scope;
    report.cacheHit = match.exact;
  }
  if (opts.lookupOnly) {
    forgetUsage(ctx.stateFile);
    return finish();
  }
  if (!match) {
    await setAsideEverything(ctx, report);
    writeState(ctx.stateFile, { version: 1, primaryKey: ctx.key, parent: null, index: {} });
    return finish();
  }
  // No Zstandard engine (ZstdUnavailableError, naming the fix): a miss, before the folders are touched.
  if (match.manifest.entries.length > 0) await zstdEngine(ctx.runtime.zstd);
  const { targets, folders } = restoreTargets(ctx, match.manifest);
  // Another restore into the same folder sees these staging folders live as long as this one runs.
  const stopHeartbeat = heartbeat([...targets.values()].map((t) => t.staging));
  // One scan of each folder serves both: which entries are already there as the key has them, and
  // which the key lacks (moved aside before anything is written).
  const scans = new Map<string, ScanResult>();
  for (const [name, t] of targets)
    scans.set(name, await scanFolder(folders.get(name) as CacheFolder, t.kind));
  const present = presentEntries(ctx, match.manifest, scans);
  report.entriesPresent = present.length;
  let restored: EntryRef[];
  try {
    for (const [name, t] of targets) {
      const keep = new Set(match.manifest.entries.filter((e) => e.cache === name).map((e) => e.name));
      report.entriesMovedAside += await moveAsideUnlisted(t.kind, t.root, keep, scans.get(name));
    }
    const { results, threads } = await readPacks(ctx, match.manifest, targets, new Set(present.map(entryId)));
    report.threads = threads;
    restored = await settleOutcomes(ctx, match, results, { targets, folders }, report);
  } finally {
    stopHeartbeat();
    for (const t of targets.values()) fs.rmSync(t.staging, { recursive: true, force: true });
  }
  countRestored(report, restored);
  // actions/cache's cache-hit: the exact key, and every one of its entries now in place.
  const wanted = match.manifest.entries.filter((e) => targets.has(e.cache)).length;
  report.cacheHit = match.exact && report.entriesRestored + report.entriesPresent === wanted;
  const state = await stateAfterRestore(ctx, match, [...restored, ...present], targets, folders);
  writeState(ctx.stateFile, state);
  const atime = Object.values(state.usage?.atime ?? {});
  report.usage = {
    ...workingSetOf(match.manifest, new Set(targets.keys())),
    atime: atime.length ? atime.every(Boolean) : null,
  };
  return finish();
}

function emptyReport(ctx: JobContext, lookupOnly: boolean): RestoreReport {
  return {
    primaryKey: ctx.key,
    store: ctx.store.description,
    matchedKey: null,
    matchedScope: null,
    cacheHit: false,
    lookupOnly,
    entriesRestored: 0,
    entriesPresent: 0,
    bytesRestored: 0,
    bytesDownloaded: 0,
    entriesBad: 0,
    membersRefused: 0,
    entriesMovedAside: 0,
    faults: [],
    usage: { live: { entries: 0, bytes: 0 }, unused: { entries: 0, bytes: 0 }, atime: null },
    threads: 0,
    seconds: 0,
    caches: ctx.caches.map((c) => ({ name: c.name, path: c.path, entries: 0, bytes: 0 })),
  };
}

/** Nothing restored: whatever the folders hold came from elsewhere and must not be saved as ours. */
async function setAsideEverything(ctx: JobContext, report: RestoreReport): Promise<void> {
  for (const c of ctx.caches) {
    const kind = folderKind(c);
    if (kind)
      report.entriesMovedAside += await moveAsideUnlisted(kind, c.path, new Set(), await scanFolder(c, kind));
  }
}

function restoreTargets(ctx: JobContext, manifest: Manifest): Targets {
  const targets = new Map<string, RestoreTarget>();
  const folders = new Map<string, CacheFolder>();
  for (const c of ctx.caches) {
    const saved = manifest.caches.find((m) => m.name === c.name);
    if (!saved) continue;
    if (c.kind !== "auto" && saved.kind !== c.kind) {
      ctx.log.warn(
        `cache ${c.name} was saved as kind ${saved.kind} but is configured as ${c.kind}; not restoring it`,
      );
      continue;
    }
    removeStaleStaging(c.path);
    folders.set(c.name, c);
    targets.set(c.name, { kind: cacheKind(saved.kind), root: c.path, staging: makeStaging(c.path) });
  }
  return { targets, folders };
}

/**
 * What the pack readers' outcomes leave in place, counted from the disk, not from what the readers
 * said: an entry a thread placed before it died, or that another restore into this folder placed,
 * is in the cache as the manifest has it. The rest are bad entries and faults, said in one warning.
 */
async function settleOutcomes(
  ctx: JobContext,
  match: Match,
  results: PackOutcome[],
  { targets, folders }: Targets,
  report: RestoreReport,
): Promise<EntryRef[]> {
  const restored: EntryRef[] = [];
  const missing: EntryRef[] = [];
  const unreadable: Fault[] = [];
  const refused: Fault[] = [];
  /** Faults of entries, by "cache/name" (the readers' label, as `recovered` holds it). */
  const entryFaults: { entry: string; fault: Fault }[] = [];
  for (const { refs, result } of results) {
    const ok = new Set(result.restored.map(entryId));
    for (const r of refs) (ok.has(entryId(r)) ? restored : missing).push(r);
    report.bytesDownloaded += result.bytes;
    report.membersRefused += result.refused.length;
    const pack = refs[0] ? match.manifest.packs[refs[0].pack]?.object : "?";
    if (result.packError) {
      const message = `${pack}: ${result.packError}`;
      unreadable.push(fault(diskFaultIn(message) ? "disk-failed" : "pack-unreadable", message));
    }
    for (const b of result.bad) {
      const message = `entry ${b.entry}: ${b.reason}`;
      entryFaults.push({
        entry: b.entry,
        fault: fault(diskFaultIn(message) ? "disk-failed" : "entry-bad", message),
      });
    }
    for (const r of result.refused) refused.push(fault("member-refused", `pack member refused: ${r}`));
  }
  const onDisk = await verifiedOnDisk(missing, targets, folders);
  const recovered = new Set<string>();
  for (const r of missing)
    if (onDisk.has(entryId(r))) {
      restored.push(r);
      recovered.add(`${r.cache}/${r.name}`);
    }
  report.entriesBad = missing.length - recovered.size;
  const stillBad = entryFaults.filter((f) => !recovered.has(f.entry)).map((f) => f.fault);
  // One warning, however many packs failed; the details with --verbose.
  if (unreadable.length || report.entriesBad || report.membersRefused) {
    const parts = [
      unreadable.length
        ? `${unreadable.length} of ${results.length} packs could not be read (${unreadable[0]?.message})`
        : null,
      report.entriesBad
        ? `${report.entriesBad} entries failed verification or were missing and were not written`
        : null,
      report.membersRefused ? `${report.membersRefused} unsafe pack members refused` : null,
    ].filter(Boolean);
    ctx.log.warn(`restore of ${match.key} incomplete: ${parts.join("; ")}`);
    const said = [...unreadable, ...stillBad, ...refused];
    for (const f of said) ctx.log.debug(`${f.code}: ${f.message}`);
    report.faults.push(...said);
  }
  return restored;
}

function countRestored(report: RestoreReport, restored: EntryRef[]): void {
  for (const r of restored) {
    const c = report.caches.find((x) => x.name === r.cache);
    if (c) {
      c.entries++;
      c.bytes += r.size;
    }
    report.entriesRestored++;
    report.bytesRestored += r.size;
  }
}

/** Under --strict, a store or data fault it names fails the restore (exit 3) once what was good is in place. */
function finishRestore(ctx: JobContext, report: RestoreReport): RestoreReport {
  if (report.entriesMovedAside) {
    ctx.log.info(
      `moved ${report.entriesMovedAside} entries the restored key lacks to .kcache-aside (they will not be saved)`,
    );
  }
  const failing = report.faults.filter((f) => ctx.strict.fails(f.code));
  const first = failing[0];
  if (first)
    throw new StrictFaultError(
      `restore met ${failing.length} store or data fault(s) (--strict): ${first.code}: ${first.message}`,
      first,
    );
  return report;
}
