import fs from "node:fs";
import type { CacheFolder, CacheKind, ScanResult } from "../../kinds/kind.js";
import { cacheKind } from "../../kinds/registry.js";
import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../../manifest/manifest.js";
import type { RestoreTarget } from "../../pack/pack-request.js";
import { heartbeat, makeStaging } from "../../pack/read/staging-owner.js";
import { zstdEngine } from "../../pack/zstd/engines.js";
import { scanFolder } from "../cache-folder.js";
import type { JobContext } from "../job-context.js";
import { type FramedRef, planLazy, sumWhole } from "../lazy/lazy-plan.js";
import { prefetchFramed } from "../lazy/prefetch.js";
import type { Match } from "../lookup.js";
import type { WorkingFolders } from "./restore-folders.js";
import { countRestored, settleOutcomes } from "./restore-outcomes.js";
import { readPacks } from "./restore-packs.js";
import type { RestoreReport } from "./restore-report.js";
import { presentEntries } from "./restore-state.js";

/** What placing one key's entries left in the job's folders. */
export interface Placed {
  /** Entries of the key now in place: written by this restore, or already there as the key has them. */
  restored: EntryRef[];
  present: EntryRef[];
  /** The kind each cache of the key was saved as. */
  kinds: Map<string, CacheKind>;
  /** Entries a lazy restore left in the store, to be fetched when the job looks one up. */
  deferred: FramedRef[];
}

/**
 * Writes a key's entries that are absent or differ (and that `skip` does not name: an earlier key
 * of this restore placed them) into the job's folders, and counts what is there.
 */
export async function placeKey(
  work: JobContext,
  folders: WorkingFolders,
  match: Match,
  report: RestoreReport,
  /** `skip`: entries an earlier key of this restore placed; `servesLookups`: lazy caches may leave entries in the store. */
  { skip, servesLookups }: { skip: Set<string>; servesLookups: boolean },
): Promise<Placed> {
  // No Zstandard engine (ZstdUnavailableError, naming the fix): a miss, before the folders are touched.
  if (match.manifest.entries.length > 0) await zstdEngine(work.runtime.zstd);
  const { targets, byName } = restoreTargets(work, match.manifest);
  const kinds = new Map([...targets].map(([name, t]) => [name, t.kind]));
  // Another restore into the same folder sees these staging folders live as long as this one runs.
  const stopHeartbeat = heartbeat([...targets.values()].map((t) => t.staging));
  const scans = new Map<string, { kind: CacheKind; root: string; scan: ScanResult }>();
  for (const [name, t] of targets) {
    const before = folders.scans.get(name);
    const scan =
      before?.kind === t.kind && skip.size === 0
        ? before.scan
        : await scanFolder(byName.get(name) as CacheFolder, t.kind);
    scans.set(name, { kind: t.kind, root: t.root, scan });
  }
  const wanted: Manifest = {
    ...match.manifest,
    entries: match.manifest.entries.filter((e) => !skip.has(entryId(e))),
  };
  const present = presentEntries(wanted, scans, folders.state);
  report.entriesPresent += present.length;
  let restored: EntryRef[];
  const presentIds = new Set(present.map(entryId));
  const lazy = planLazy(
    match.manifest,
    wanted.entries.filter((e) => !presentIds.has(entryId(e))),
    servesLookups ? lazyCaches(work, targets) : new Set(),
  );
  // A lazy cache's restore is reported as one even where every pack was read whole: it says why.
  if (lazy.prefetch.length + lazy.deferred.length || Object.keys(lazy.readWhole).length) {
    report.lazy ??= { prefetched: 0, deferred: 0, deferredBytes: 0, readWhole: {} };
    report.lazy.prefetched += lazy.prefetch.length;
    sumWhole(report.lazy.readWhole, lazy.readWhole);
  }
  try {
    const skip = new Set([...presentIds, ...[...lazy.prefetch, ...lazy.deferred].map(entryId)]);
    const { results, threads } = await readPacks(work, wanted, targets, skip);
    results.push(...(await prefetchFramed(work, wanted, lazy.prefetch, targets)));
    report.threads = Math.max(report.threads, threads);
    restored = await settleOutcomes(work, match, results, { targets, folders: byName }, report);
  } finally {
    stopHeartbeat();
    for (const t of targets.values()) fs.rmSync(t.staging, { recursive: true, force: true });
  }
  countRestored(report, restored);
  const had = new Set(
    [...scans].flatMap(([cache, s]) => s.scan.entries.map((e) => entryId({ cache, name: e.name }))),
  );
  report.entriesReplaced += restored.filter((r) => had.has(entryId(r))).length;
  return { restored, present, kinds, deferred: lazy.deferred };
}

/** The caches restored lazily: configured so, and saved as Triton's (the only kind whose lookups kcache serves). */
function lazyCaches(ctx: JobContext, targets: Map<string, RestoreTarget>): Set<string> {
  const out = new Set<string>();
  for (const c of ctx.caches) {
    if (!c.lazy) continue;
    const kind = targets.get(c.name)?.kind;
    // Triton's cache manager folders: every lookup goes through the hook, which asks kcache.
    if (kind?.lookupsSeenByHook) out.add(c.name);
    else if (kind)
      ctx.log.info(
        `${c.name} is a ${kind.kind} cache: restored eagerly (lazy restores serve Triton's caches only)`,
      );
  }
  return out;
}

function restoreTargets(
  ctx: JobContext,
  manifest: Manifest,
): { targets: Map<string, RestoreTarget>; byName: Map<string, CacheFolder> } {
  const targets = new Map<string, RestoreTarget>();
  const byName = new Map<string, CacheFolder>();
  for (const c of ctx.caches) {
    const saved = manifest.caches.find((m) => m.name === c.name);
    if (!saved) {
      // Nothing to restore into this folder: say why where the key holds caches this job lacks.
      const others = manifest.caches.filter((m) => !ctx.caches.some((h) => h.name === m.name));
      if (others.length)
        ctx.log.warn(
          `${manifest.key} holds no cache named ${c.name} (kind ${c.kind}), only ${others.map((m) => `${m.name} (kind ${m.kind})`).join(", ")}: the cache was renamed or its kind changed (a path input's cache is named path-<n> under kind: auto and after its kind otherwise); nothing restored into ${c.path}, and the next save starts it afresh`,
        );
      continue;
    }
    if (c.kind !== "auto" && saved.kind !== c.kind) {
      ctx.log.warn(
        `cache ${c.name} was saved as kind ${saved.kind} but is configured as ${c.kind}; nothing restored into ${c.path} (set kind: ${saved.kind} back to use ${manifest.key}, or let the next save start it afresh)`,
      );
      continue;
    }
    byName.set(c.name, c);
    targets.set(c.name, { kind: cacheKind(saved.kind), root: c.path, staging: makeStaging(c.path) });
  }
  return { targets, byName };
}
