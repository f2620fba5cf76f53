import fs from "node:fs";
import { performance } from "node:perf_hooks";
import type { CacheFolder, CacheKind, ScanResult } from "../kinds/kind.js";
import { cacheKind } from "../kinds/registry.js";
import { entryId } from "../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../manifest/manifest.js";
import type { RestoreTarget } from "../pack/pack-request.js";
import { heartbeat, makeStaging } from "../pack/read/staging-owner.js";
import { zstdEngine } from "../pack/zstd/engines.js";
import { scanFolder } from "./cache-folder.js";
import { StrictFaultError } from "./faults.js";
import type { JobContext } from "./job-context.js";
import { writeState } from "./local-state.js";
import { findManifest, type Match } from "./lookup.js";
import type { BuiltJobFolder } from "./persistent/job-folder.js";
import { prepareFolders, type WorkingFolders } from "./restore-folders.js";
import { countRestored, settleOutcomes } from "./restore-outcomes.js";
import { readPacks } from "./restore-packs.js";
import type { RestoreReport } from "./restore-report.js";
import { presentEntries, stateAfterRestore } from "./restore-state.js";
import { workingSetOf } from "./working-set.js";

export type { RestoreReport } from "./restore-report.js";

/**
 * Restores the best-matching manifest into the configured cache folders, wherever they are on this
 * runner, and never makes a folder colder than it was: every entry already there stays, and only the
 * key's entries that are absent or differ are written (verified, atomically; bad ones are skipped and
 * counted). Entries the key lacks stay for the job as local and unverified: a save never uploads
 * them as they are. Under `isolate`, all of this happens in a folder of the job's own.
 */
export async function restore(ctx: JobContext, opts: { lookupOnly?: boolean } = {}): Promise<RestoreReport> {
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
  const placed = { keyEntries: [] as EntryRef[], kinds: new Map<string, CacheKind>() };
  try {
    match = await findManifest(ctx, report.faults);
    if (match) {
      report.matchedKey = match.key;
      report.matchedScope = match.scope;
      report.cacheHit = match.exact;
      if (!lookupOnly) await placeKey(work, folders, match, report, placed);
    }
  } finally {
    // Whatever the store did, the state says what the folders hold and whose they are.
    await record(work, folders, lookupOnly ? null : match, placed, report);
  }
  report.seconds = (performance.now() - t0) / 1000;
  return lookupOnly ? report : finishRestore(ctx, report);
}

/** Writes the key's absent or differing entries into the job's folders and counts what is there. */
async function placeKey(
  work: JobContext,
  folders: WorkingFolders,
  match: Match,
  report: RestoreReport,
  placed: { keyEntries: EntryRef[]; kinds: Map<string, CacheKind> },
): Promise<void> {
  // No Zstandard engine (ZstdUnavailableError, naming the fix): a miss, before the folders are touched.
  if (match.manifest.entries.length > 0) await zstdEngine(work.runtime.zstd);
  const { targets, byName } = restoreTargets(work, match.manifest);
  for (const [name, t] of targets) placed.kinds.set(name, t.kind);
  // Another restore into the same folder sees these staging folders live as long as this one runs.
  const stopHeartbeat = heartbeat([...targets.values()].map((t) => t.staging));
  const scans = new Map<string, { kind: CacheKind; root: string; scan: ScanResult }>();
  for (const [name, t] of targets) {
    const before = folders.scans.get(name);
    const scan =
      before?.kind === t.kind ? before.scan : await scanFolder(byName.get(name) as CacheFolder, t.kind);
    scans.set(name, { kind: t.kind, root: t.root, scan });
  }
  const present = presentEntries(work, match.manifest, scans);
  report.entriesPresent = present.length;
  let restored: EntryRef[];
  try {
    const { results, threads } = await readPacks(
      work,
      match.manifest,
      targets,
      new Set(present.map(entryId)),
    );
    report.threads = threads;
    restored = await settleOutcomes(work, match, results, { targets, folders: byName }, report);
  } finally {
    stopHeartbeat();
    for (const t of targets.values()) fs.rmSync(t.staging, { recursive: true, force: true });
  }
  countRestored(report, restored);
  const had = new Set(
    [...scans].flatMap(([cache, s]) => s.scan.entries.map((e) => entryId({ cache, name: e.name }))),
  );
  report.entriesReplaced = restored.filter((r) => had.has(entryId(r))).length;
  // actions/cache's cache-hit: the exact key, and every one of its entries now in place.
  const wanted = match.manifest.entries.filter((e) => targets.has(e.cache)).length;
  report.cacheHit = match.exact && report.entriesRestored + report.entriesPresent === wanted;
  placed.keyEntries = [...restored, ...present];
  report.usage = { ...workingSetOf(match.manifest, new Set(targets.keys())), atime: null };
}

/** The state the save reads, written once, with what the folders hold now. */
async function record(
  work: JobContext,
  folders: WorkingFolders,
  parent: Match | null,
  placed: { keyEntries: EntryRef[]; kinds: Map<string, CacheKind> },
  report: RestoreReport,
): Promise<void> {
  // A lookup-only restore placed and stamped nothing: a save after it must not read use from stamps.
  const r = await stateAfterRestore(work, { parent, ...placed, stamp: !report.lookupOnly });
  r.state.job = {
    startedAt: folders.startedAt,
    markers: folders.markers,
    folders: folders.jobFolders,
    seen: r.seen,
    local: r.state.local ?? {},
    atime: r.state.usage?.atime ?? {},
  };
  writeState(work.stateFile, r.state);
  report.entriesLocal = r.local;
  if (report.matchedKey && !report.lookupOnly) report.usage.atime = r.atime;
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
    faults: [],
    usage: { live: { entries: 0, bytes: 0 }, unused: { entries: 0, bytes: 0 }, atime: null },
    threads: 0,
    seconds: 0,
    caches: [],
  };
}

function restoreTargets(
  ctx: JobContext,
  manifest: Manifest,
): { targets: Map<string, RestoreTarget>; byName: Map<string, CacheFolder> } {
  const targets = new Map<string, RestoreTarget>();
  const byName = new Map<string, CacheFolder>();
  for (const c of ctx.caches) {
    const saved = manifest.caches.find((m) => m.name === c.name);
    if (!saved) continue;
    if (c.kind !== "auto" && saved.kind !== c.kind) {
      ctx.log.warn(
        `cache ${c.name} was saved as kind ${saved.kind} but is configured as ${c.kind}; not restoring it`,
      );
      continue;
    }
    byName.set(c.name, c);
    targets.set(c.name, { kind: cacheKind(saved.kind), root: c.path, staging: makeStaging(c.path) });
  }
  return { targets, byName };
}

/** Says what the folders held and hold; under --strict, a store or data fault it names fails the restore (exit 3) once what was good is in place. */
function finishRestore(ctx: JobContext, report: RestoreReport): RestoreReport {
  ctx.log.info(folderLine(report));
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
  const local = r.entriesLocal
    ? `; ${r.entriesLocal} local and unverified (not in the key: the job uses them, a save never uploads them as they are)`
    : "";
  return `${r.entriesBefore} entries were in the cache folders; ${added}${local}`;
}
