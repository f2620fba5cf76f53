import { Readable } from "node:stream";
import { StoreError } from "../../errors.js";
import { isTrustedScope } from "../../keys/scope.js";
import type { Log } from "../../log.js";
import {
  CONDEMNED,
  condemnedObject,
  MANIFESTS,
  PACKS,
  PLANS,
  parseCondemnedObject,
  planObject,
  RUNS,
} from "../../store/layout.js";
import type { Store, StoredObject } from "../../store/store.js";
import { type CatalogItem, readCatalog, readCatalogItems } from "../catalog.js";
import { leased, readLeases, storeNow } from "../pack-lease.js";
import { liveToDelete } from "./prune-live.js";

export interface PrunePolicy {
  /** Keep the newest N manifests per scope and prefix. */
  keep?: number;
  /** Delete manifests older than this many milliseconds. */
  olderThanMs?: number;
  /** Delete the oldest manifests until the packs still referenced total at most this many bytes. */
  maxBytes?: number;
  /** Packs younger than this are never deleted: a save in flight may not have written its manifest yet. */
  graceMs: number;
  dryRun?: boolean;
  now?: Date;
}

export interface PruneReport {
  manifestsDeleted: { scope: string; key: string; reason: string }[];
  packsDeleted: string[];
  bytesFreed: number;
  manifestsKept: number;
  bytesKept: number;
  /** Unreferenced packs spared because a save in flight leases them or a manifest written meanwhile names them. */
  packsSpared: number;
  /** Temporary files of killed saves removed. */
  temporaryReaped: number;
  /** Run records (kcache stats' history) older than --older-than. */
  runRecordsDeleted: number;
  /** Live objects (store.live) of entries a key now holds, or no key took within a day (prune-live.ts). */
  liveDeleted: number;
  dryRun: boolean;
}

/**
 * Deletes manifests by age, count and total size, then every pack no remaining manifest references.
 * Damaged manifests are deleted too: nothing can restore from them.
 */
export async function prune(store: Store, policy: PrunePolicy, log: Log): Promise<PruneReport> {
  if (!store.capabilities.listAll || !store.capabilities.delete) {
    throw new StoreError(
      `${store.description} cannot list or delete objects, so kcache cannot prune it${store.capabilityHint ? `; ${store.capabilityHint}` : "; it evicts entries by itself"}`,
    );
  }
  const now = (policy.now ?? new Date()).getTime();
  const catalog = await readCatalog(store);
  const packs = await store.list(`${PACKS}/`);
  const stored = new Map(packs.map((p) => [p.name, p.size]));
  const { doomed, kept } = chooseManifests(catalog, policy, now, stored);
  const referenced = new Set<string>();
  for (const i of kept) for (const p of i.manifest?.packs ?? []) referenced.add(p.object);
  const orphans = packs.filter((p) => !referenced.has(p.name) && now - p.modified.getTime() > policy.graceMs);

  const report: PruneReport = {
    manifestsDeleted: catalog
      .filter((i) => doomed.has(i.object))
      .map((i) => ({ scope: i.scope, key: i.key, reason: doomed.get(i.object) as string })),
    packsDeleted: orphans.map((p) => p.name),
    bytesFreed: orphans.reduce((s, p) => s + p.size, 0),
    manifestsKept: kept.length,
    bytesKept: packs.filter((p) => referenced.has(p.name)).reduce((s, p) => s + p.size, 0),
    packsSpared: 0,
    temporaryReaped: 0,
    runRecordsDeleted: 0,
    liveDeleted: 0,
    dryRun: Boolean(policy.dryRun),
  };
  const live = await liveToDelete(store, kept, policy, now);
  report.liveDeleted = live.length;
  // Run records age out by the same --older-than as keys.
  const oldRuns =
    policy.olderThanMs === undefined
      ? []
      : (await store.list(`${RUNS}/`)).filter(
          (o) => now - o.modified.getTime() > (policy.olderThanMs as number),
        );
  report.runRecordsDeleted = oldRuns.length;
  if (policy.dryRun) return report;
  // First, before prune writes anything of its own (a local store's first write reaps them too).
  report.temporaryReaped = (await store.reapTemporary?.()) ?? 0;
  for (const o of [...oldRuns, ...live]) await store.delete(o.name);
  // Manifests first: a restore never finds a manifest whose packs are gone.
  for (const object of doomed.keys()) await store.delete(object);
  // A key's compile plan goes with it, and any plan whose key is gone (its save lost a race).
  const keys = new Set(kept.map((i) => planObject(i.scope, i.key)));
  for (const o of await store.list(`${PLANS}/`))
    if (!keys.has(o.name) && now - o.modified.getTime() > policy.graceMs) await store.delete(o.name);

  const deleted = await deleteOrphans(store, orphans, new Set(catalog.map((i) => i.object)), referenced, now);
  report.packsSpared = orphans.length - deleted.length;
  report.packsDeleted = deleted.map((p) => p.name);
  report.bytesFreed = deleted.reduce((s, p) => s + p.size, 0);
  log.debug(`pruned ${doomed.size} manifests and ${deleted.length} packs (${report.packsSpared} spared)`);
  return report;
}

/**
 * Which manifests go (damaged, beyond the newest `keep` per scope and prefix, too old, over the size
 * budget) and why. The budget counts each pack at the size the store lists it (`stored`), never the
 * size a manifest claims (anyone who can write a scope can write a manifest), and takes keys of
 * untrusted scopes (pull requests, unplaced builds) first, oldest first, before any of the default
 * branch's: a pull request's keys never push the default branch's out.
 */
function chooseManifests(
  catalog: CatalogItem[],
  policy: PrunePolicy,
  now: number,
  stored: Map<string, number>,
): { doomed: Map<string, string>; kept: CatalogItem[] } {
  const doomed = new Map<string, string>();
  const kept: CatalogItem[] = [];
  const perGroup = new Map<string, number>();
  for (const item of catalog) {
    if (!item.manifest) {
      doomed.set(item.object, `damaged: ${item.damaged}`);
      continue;
    }
    const group = `${item.scope}\0${item.manifest.prefix}`;
    const rank = (perGroup.get(group) ?? 0) + 1;
    perGroup.set(group, rank);
    if (policy.keep !== undefined && rank > policy.keep)
      doomed.set(item.object, `beyond the newest ${policy.keep}`);
    else if (policy.olderThanMs !== undefined && now - item.modified.getTime() > policy.olderThanMs) {
      doomed.set(item.object, "older than the limit");
    } else kept.push(item);
  }
  if (policy.maxBytes !== undefined) {
    // Each pack counted once however many manifests share it, at its stored size.
    const packBytes = (items: CatalogItem[]) => {
      const names = new Set<string>();
      for (const i of items) for (const p of i.manifest?.packs ?? []) names.add(p.object);
      return [...names].reduce((a, n) => a + (stored.get(n) ?? 0), 0);
    };
    while (kept.length > 0 && packBytes(kept) > policy.maxBytes) {
      // `kept` is newest first: the last untrusted key, else the last of all.
      const untrusted = kept.findLastIndex((i) => !isTrustedScope(i.scope));
      const [out] = kept.splice(untrusted >= 0 ? untrusted : kept.length - 1, 1);
      doomed.set((out as CatalogItem).object, "over the size budget");
    }
  }
  return { doomed, kept };
}

/**
 * Deletes orphan packs in the order pack-lease.ts explains: condemn, read leases, re-read manifests
 * (a save may have committed one since the catalog was read), delete what is still unreferenced and
 * unleased. Expired leases and the marks of packs referenced again (or gone) are cleared.
 */
async function deleteOrphans(
  store: Store,
  orphans: StoredObject[],
  seen: Set<string>,
  referenced: Set<string>,
  now: number,
): Promise<StoredObject[]> {
  for (const p of orphans)
    await store.put(condemnedObject(p.name), Readable.from([Buffer.from(String(now))]));
  // Lease ages by the store's clock, not this host's: hours of skew either way must not expire a
  // live save's lease.
  const leases = await readLeases(store, await storeNow(store));
  for (const o of await store.list(`${MANIFESTS}/`)) {
    if (seen.has(o.name)) continue;
    const item = (await readCatalogItems(store, [o.name]))[0];
    for (const p of item?.manifest?.packs ?? []) referenced.add(p.object);
  }
  const deleted: StoredObject[] = [];
  for (const p of orphans) {
    if (referenced.has(p.name) || leased(leases.live, p.name)) continue;
    await store.delete(p.name);
    await store.delete(condemnedObject(p.name));
    deleted.push(p);
  }
  for (const l of leases.expired) await store.delete(l);
  // Marks of packs that are referenced again, or gone, are cleared.
  for (const o of await store.list(`${CONDEMNED}/`)) {
    const pack = parseCondemnedObject(o.name);
    if (pack === null) continue;
    if (referenced.has(pack) || !(await store.exists(pack))) await store.delete(o.name);
  }
  return deleted;
}
