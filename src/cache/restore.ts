import fs from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { IntegrityError } from "../errors.js";
import type { CacheFolder, ScanResult } from "../kinds/kind.js";
import { cacheKind } from "../kinds/registry.js";
import { entryId } from "../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../manifest/manifest.js";
import type { RestoreTarget } from "../pack/member-policy.js";
import { type PackReadResult, readPack } from "../pack/pack-reader.js";
import { restoreOnThread } from "../pack/restore-on-thread.js";
import { heartbeat, makeStaging, stagingIsStale } from "../pack/staging-owner.js";
import { askedThreads, ThreadPool, threadCount } from "../pack/thread-pool.js";
import { zstdEngine } from "../pack/zstd.js";
import { folderKind, scanFolder } from "./cache-folder.js";
import { entrySignature } from "./entry-signature.js";
import type { JobContext } from "./job-context.js";
import { type LocalState, readState, writeState } from "./local-state.js";
import { findManifest, type Match } from "./lookup.js";
import { moveAsideUnlisted } from "./reconcile.js";
import { hashEntry } from "./save-scan.js";

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
  /** Store and data faults met (damaged manifests, unreadable packs, bad entries); --strict fails on any. */
  faults: string[];
  /** Worker threads that read packs (0: read in the main thread). */
  threads: number;
  seconds: number;
  caches: { name: string; path: string; entries: number; bytes: number }[];
}

/** Packs read at once in this thread (their downloads overlap) when no worker threads are used. */
const PACK_CONCURRENCY = 4;
/** Below this many compressed bytes in all, starting threads costs more than it saves. */
const THREADS_ABOVE = 4 * 1024 * 1024;

/**
 * Restores the best-matching manifest into the configured cache paths, wherever they are on this
 * runner. Verified entries land atomically; bad ones are skipped and counted, never written.
 */
export async function restore(ctx: JobContext, opts: { lookupOnly?: boolean } = {}): Promise<RestoreReport> {
  const t0 = performance.now();
  const { log } = ctx;
  const report: RestoreReport = {
    primaryKey: ctx.key,
    store: ctx.store.description,
    matchedKey: null,
    matchedScope: null,
    cacheHit: false,
    lookupOnly: Boolean(opts.lookupOnly),
    entriesRestored: 0,
    entriesPresent: 0,
    bytesRestored: 0,
    bytesDownloaded: 0,
    entriesBad: 0,
    membersRefused: 0,
    entriesMovedAside: 0,
    faults: [],
    threads: 0,
    seconds: 0,
    caches: ctx.caches.map((c) => ({ name: c.name, path: c.path, entries: 0, bytes: 0 })),
  };
  const match = await findManifest(ctx, report.faults);
  if (match) {
    report.matchedKey = match.key;
    report.matchedScope = match.scope;
    report.cacheHit = match.exact;
  }
  if (opts.lookupOnly) {
    report.seconds = (performance.now() - t0) / 1000;
    return report;
  }
  if (!match) {
    // Nothing restored: whatever the folders hold came from elsewhere and must not be saved as ours.
    for (const c of ctx.caches) {
      const kind = folderKind(c);
      if (kind)
        report.entriesMovedAside += await moveAsideUnlisted(
          kind,
          c.path,
          new Set(),
          await scanFolder(c, kind),
        );
    }
    writeState(ctx.stateFile, { version: 1, primaryKey: ctx.key, parent: null, index: {} });
    report.seconds = (performance.now() - t0) / 1000;
    return finishRestore(ctx, report);
  }

  // No Zstandard engine (ZstdUnavailableError, naming the fix): a miss, before the folders are touched.
  if (match.manifest.entries.length > 0) await zstdEngine();
  const targets = new Map<string, RestoreTarget>();
  const folders = new Map<string, CacheFolder>();
  for (const c of ctx.caches) {
    const saved = match.manifest.caches.find((m) => m.name === c.name);
    if (!saved) continue;
    if (c.kind !== "auto" && saved.kind !== c.kind) {
      log.warn(
        `cache ${c.name} was saved as kind ${saved.kind} but is configured as ${c.kind}; not restoring it`,
      );
      continue;
    }
    removeStaleStaging(c.path);
    folders.set(c.name, c);
    targets.set(c.name, { kind: cacheKind(saved.kind), root: c.path, staging: makeStaging(c.path) });
  }

  // Another restore into the same folder sees these staging folders live as long as this one runs.
  const stopHeartbeat = heartbeat([...targets.values()].map((t) => t.staging));
  // One scan of each folder serves both: which entries are already there as the key has them, and
  // which the key lacks (moved aside before anything is written).
  const scans = new Map<string, ScanResult>();
  for (const [name, t] of targets)
    scans.set(name, await scanFolder(folders.get(name) as CacheFolder, t.kind));
  const restored: EntryRef[] = [];
  const present = presentEntries(ctx, match.manifest, scans);
  report.entriesPresent = present.length;
  try {
    for (const [name, t] of targets) {
      const keep = new Set(match.manifest.entries.filter((e) => e.cache === name).map((e) => e.name));
      report.entriesMovedAside += await moveAsideUnlisted(t.kind, t.root, keep, scans.get(name));
    }
    const { results, threads } = await readPacks(ctx, match.manifest, targets, new Set(present.map(entryId)));
    report.threads = threads;
    const packErrors: string[] = [];
    const problems: string[] = [];
    const missing: EntryRef[] = [];
    for (const { refs, result } of results) {
      const ok = new Set(result.restored.map(entryId));
      for (const r of refs) (ok.has(entryId(r)) ? restored : missing).push(r);
      report.bytesDownloaded += result.bytes;
      report.membersRefused += result.refused.length;
      const pack = refs[0] ? match.manifest.packs[refs[0].pack]?.object : "?";
      if (result.packError) packErrors.push(`${pack}: ${result.packError}`);
      for (const b of result.bad) problems.push(`entry ${b.entry}: ${b.reason}`);
      for (const r of result.refused) problems.push(`pack member refused: ${r}`);
    }
    // Counted from the disk, not from what the readers said: an entry a thread placed before it
    // died, or that another restore into this folder placed, is in the cache as the manifest has it.
    const onDisk = await verifiedOnDisk(missing, targets, folders);
    const recovered = new Set<string>();
    for (const r of missing)
      if (onDisk.has(entryId(r))) {
        restored.push(r);
        recovered.add(`entry ${r.cache}/${r.name}: `);
      }
    report.entriesBad = missing.length - recovered.size;
    const stillBad = problems.filter((p) => ![...recovered].some((r) => p.startsWith(r)));
    problems.length = 0;
    problems.push(...stillBad);
    // One warning, however many packs failed; the details with --verbose.
    if (packErrors.length || report.entriesBad || report.membersRefused) {
      const parts = [
        packErrors.length
          ? `${packErrors.length} of ${results.length} packs could not be read (${packErrors[0]})`
          : null,
        report.entriesBad
          ? `${report.entriesBad} entries failed verification or were missing and were not written`
          : null,
        report.membersRefused ? `${report.membersRefused} unsafe pack members refused` : null,
      ].filter(Boolean);
      log.warn(`restore of ${match.key} incomplete: ${parts.join("; ")}`);
      for (const p of [...packErrors, ...problems]) log.debug(p);
      report.faults.push(...packErrors, ...problems);
    }
  } finally {
    stopHeartbeat();
    for (const t of targets.values()) fs.rmSync(t.staging, { recursive: true, force: true });
  }

  for (const r of restored) {
    const c = report.caches.find((x) => x.name === r.cache);
    if (c) {
      c.entries++;
      c.bytes += r.size;
    }
    report.entriesRestored++;
    report.bytesRestored += r.size;
  }
  // actions/cache's cache-hit: the exact key, and every one of its entries now in place.
  const wanted = match.manifest.entries.filter((e) => targets.has(e.cache)).length;
  report.cacheHit = match.exact && report.entriesRestored + report.entriesPresent === wanted;
  writeState(ctx.stateFile, await stateAfterRestore(ctx, match, [...restored, ...present], targets, folders));
  report.seconds = (performance.now() - t0) / 1000;
  return finishRestore(ctx, report);
}

/** Under --strict, any store or data fault met fails the restore (exit 3) once what was good is in place. */
function finishRestore(ctx: JobContext, report: RestoreReport): RestoreReport {
  if (report.entriesMovedAside) {
    ctx.log.info(
      `moved ${report.entriesMovedAside} entries the restored key lacks to .kcache-aside (they will not be saved)`,
    );
  }
  if (ctx.strict && report.faults.length) {
    throw new IntegrityError(
      `restore met ${report.faults.length} store or data fault(s) (--strict): ${report.faults[0]}`,
    );
  }
  return report;
}

/**
 * Entries the cache folder already holds as the manifest has them: recorded with this digest by the
 * last restore or save on this runner, and with their files' stats unchanged since.
 */
function presentEntries(ctx: JobContext, manifest: Manifest, scans: Map<string, ScanResult>): EntryRef[] {
  const state = readState(ctx.stateFile);
  if (!state) return [];
  const out: EntryRef[] = [];
  for (const [name, scan] of scans) {
    const known = state.index[name];
    if (!known) continue;
    const onDisk = new Map(scan.entries.map((e) => [e.name, entrySignature(e)]));
    for (const e of manifest.entries) {
      const k = known[e.name];
      if (e.cache === name && k && k[1] === e.sha256 && onDisk.get(e.name) === k[0]) out.push(e);
    }
  }
  return out;
}

async function readPacks(
  ctx: JobContext,
  manifest: Manifest,
  targets: Map<string, RestoreTarget>,
  skip: Set<string>,
): Promise<{ results: { refs: EntryRef[]; result: PackReadResult }[]; threads: number }> {
  const byPack = new Map<number, EntryRef[]>();
  for (const e of manifest.entries) {
    if (!targets.has(e.cache) || skip.has(entryId(e))) continue;
    const list = byPack.get(e.pack) ?? [];
    list.push(e);
    byPack.set(e.pack, list);
  }
  // Largest packs first, so threads finish together.
  const jobs = [...byPack.entries()].sort(
    (a, b) => (manifest.packs[b[0]]?.size ?? 0) - (manifest.packs[a[0]]?.size ?? 0),
  );
  const out: { refs: EntryRef[]; result: PackReadResult }[] = [];
  const total = jobs.reduce((s, [i]) => s + (manifest.packs[i]?.size ?? 0), 0);
  const progress = ctx.progress?.("restoring", total);
  // Threads pay off on several packs of some size, or whenever $KCACHE_THREADS asks for them.
  const asked = (askedThreads(process.env) ?? 0) > 1;
  const threads = jobs.length > 1 && (total > THREADS_ABOVE || asked) ? threadCount(jobs.length) : 0;
  // This thread reads packs too (a local store's, whose reads yield to the event loop between
  // pieces), so n threads take n - 1 workers: each worker costs ~16 MB.
  const mainReads = ctx.store.localFile !== undefined;
  const pool = threads > 1 ? ThreadPool.open(mainReads ? threads - 1 : threads) : null;
  let next = 0;
  const worker = async (lane: number) => {
    while (next < jobs.length) {
      const [packIndex, refs] = jobs[next++] as [number, EntryRef[]];
      const pack = manifest.packs[packIndex];
      if (!pack) continue;
      let result: PackReadResult;
      try {
        if (pool && !(mainReads && lane === 0))
          result = await restoreOnThread(pool, ctx.store, pack.object, pack, refs, targets, (n) =>
            progress?.add(n),
          );
        else {
          const file = ctx.store.localFile?.(pack.object);
          const source = file ? { file } : await ctx.store.get(pack.object, pack.size);
          result = await readPack(source, pack, refs, targets, (n) => progress?.add(n));
        }
      } catch (e) {
        result = {
          restored: [],
          bad: refs.map((r) => ({ entry: `${r.cache}/${r.name}`, reason: "pack unreadable" })),
          refused: [],
          packError: (e as Error).message,
          bytes: 0,
        };
      }
      out.push({ refs, result });
    }
  };
  try {
    const lanes = pool ? threads : Math.min(PACK_CONCURRENCY, jobs.length);
    await Promise.all(Array.from({ length: lanes }, (_, lane) => worker(lane)));
  } finally {
    progress?.done();
    await pool?.close();
  }
  return { results: out, threads: pool ? threads : 0 };
}

/** Of `refs` (entries the readers did not report placed), those whole in their folder as the manifest has them. */
async function verifiedOnDisk(
  refs: EntryRef[],
  targets: Map<string, RestoreTarget>,
  folders: Map<string, CacheFolder>,
): Promise<Set<string>> {
  const out = new Set<string>();
  for (const [name, t] of targets) {
    const wanted = new Map(refs.filter((r) => r.cache === name).map((r) => [r.name, r]));
    if (wanted.size === 0) continue;
    const scan = await scanFolder(folders.get(name) as CacheFolder, t.kind);
    for (const entry of scan.entries) {
      const ref = wanted.get(entry.name);
      if (!ref) continue;
      const present = { cache: name, kind: t.kind, root: t.root, entry, sig: "", digest: null, size: 0 };
      if (t.kind.incompleteReason(t.root, entry) === null && hashEntry(present) === ref.sha256)
        out.add(entryId(ref));
    }
  }
  return out;
}

/** Records what was restored, with each entry's stat signature as it now lies on disk. */
async function stateAfterRestore(
  ctx: JobContext,
  match: Match,
  restored: EntryRef[],
  targets: Map<string, RestoreTarget>,
  folders: Map<string, CacheFolder>,
): Promise<LocalState> {
  const index: LocalState["index"] = {};
  for (const [name, t] of targets) {
    const digests = new Map(restored.filter((r) => r.cache === name).map((r) => [r.name, r.sha256]));
    const scan = await scanFolder(folders.get(name) as CacheFolder, t.kind);
    const idx: Record<string, [string, string]> = {};
    for (const e of scan.entries) {
      const d = digests.get(e.name);
      if (d) idx[e.name] = [entrySignature(e), d];
    }
    index[name] = idx;
  }
  return {
    version: 1,
    primaryKey: ctx.key,
    parent: { key: match.key, scope: match.scope, exact: match.exact, manifest: match.manifest },
    index,
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
