import { performance } from "node:perf_hooks";
import { StoreError } from "../errors.js";
import { formatBytes } from "../format.js";
import { encodeManifest } from "../manifest/manifest.js";
import { type BuildInput, type WrittenPack, writePack } from "../pack/pack-writer.js";
import { saveThreads, ThreadPool } from "../pack/thread-pool.js";
import { zstdEngine } from "../pack/zstd.js";
import { manifestObject, packObject } from "../store/layout.js";
import type { JobContext } from "./job-context.js";
import { type LocalState, readState, writeState } from "./local-state.js";
import { findManifest, type Match } from "./lookup.js";
import { type Lease, missingPacks, newLeaseId, takeLease, unusablePacks } from "./pack-lease.js";
import { commitManifest, existingManifest, manifestFor, savedEntries } from "./save-manifest.js";
import { matchParent, parentRefsOf, planSave, type SavePlan } from "./save-plan.js";
import { hashEntry, type Present, presentId, type Skipped, scanForSave } from "./save-scan.js";

export type SaveOutcome = "saved" | "nothing-new" | "key-exists" | "empty" | "lost-race";

export interface SaveReport {
  primaryKey: string;
  /** The store written to, as a person reads it. */
  store: string;
  scope: string;
  outcome: SaveOutcome;
  /** One line a person reads: what happened and why. */
  message: string;
  parentKey: string | null;
  entries: number;
  entriesNew: number;
  entriesReused: number;
  entriesDropped: number;
  packsWritten: number;
  /** Compressed bytes uploaded (packs and manifest). */
  bytesUploaded: number;
  consolidated: boolean;
  skipped: Skipped;
  seconds: number;
  caches: { name: string; entries: number; bytes: number }[];
}

/**
 * Saves the caches under the primary key in this run's scope, in phases: scan the folders
 * (save-scan.ts), plan what is reused, new, dropped or consolidated (save-plan.ts, pure), write the
 * new packs, build the manifest and commit it (save-manifest.ts), then record the local state. Only
 * entries the parent manifest lacks (or whose digest changed) are packed and uploaded; the rest are
 * referenced in the parent's packs. Incomplete entries, compiler temp folders and locks are never
 * saved. Keys are immutable.
 */
export async function save(ctx: JobContext): Promise<SaveReport> {
  const t0 = performance.now();
  const { store, log } = ctx;
  const scope = ctx.scopes.write;
  const report: SaveReport = {
    primaryKey: ctx.key,
    store: store.description,
    scope,
    outcome: "saved",
    message: "",
    parentKey: null,
    entries: 0,
    entriesNew: 0,
    entriesReused: 0,
    entriesDropped: 0,
    packsWritten: 0,
    bytesUploaded: 0,
    consolidated: false,
    skipped: { incomplete: 0, tempDirs: 0, lockFiles: 0, localFiles: 0, otherFiles: 0, vanished: 0 },
    seconds: 0,
    caches: ctx.caches.map((c) => ({ name: c.name, entries: 0, bytes: 0 })),
  };
  const done = (outcome: SaveOutcome, message: string) => {
    report.outcome = outcome;
    report.message = message;
    report.seconds = (performance.now() - t0) / 1000;
    return report;
  };

  const state = readState(ctx.stateFile);
  const ours = state?.primaryKey === ctx.key ? state : null;
  if (ours?.parent?.exact && ours.parent.scope === scope) {
    return done("key-exists", `key ${ctx.key} was restored exactly; keys are immutable, nothing saved`);
  }
  const object = manifestObject(scope, ctx.key);
  if (await existingManifest(store, object)) {
    return done(
      "key-exists",
      `key ${ctx.key} already exists in scope ${scope}; keys are immutable, nothing saved`,
    );
  }
  const parent: Match | null = ours ? ours.parent : await findManifest(ctx);
  report.parentKey = parent?.key ?? null;
  if (parent?.key === ctx.key && parent.scope === scope) {
    // Another run saved this very key since we looked (a race): it stands.
    return done(
      "key-exists",
      `key ${ctx.key} already exists in scope ${scope}; keys are immutable, nothing saved`,
    );
  }

  // Scan, reusing digests of entries whose stats match what the last restore or save recorded.
  const { present, kinds } = await scanForSave(ctx, state, report.skipped);
  const parentRefs = parentRefsOf(parent?.manifest ?? null, new Set(ctx.caches.map((c) => c.name)));

  // An entry the parent also has is hashed to tell a changed entry from a touched one.
  const kept: Present[] = [];
  for (const p of present) {
    if (p.digest === null && parentRefs.has(presentId(p))) {
      p.digest = hashEntry(p);
      if (p.digest === null) {
        report.skipped.vanished++;
        continue;
      }
    }
    kept.push(p);
  }
  let { reused, dropped } = matchParent(kept, parentRefs);
  const fresh = () => kept.filter((p) => !reused.includes(p));

  if (parent && parent.key === ctx.key && fresh().length === 0 && dropped === 0) {
    // This very key, visible from another scope (a pull request that restored the default branch's).
    writeState(ctx.stateFile, nextState(ctx.key, ours?.parent ?? parent, kept));
    report.entries = kept.length;
    report.entriesReused = reused.length;
    return done("nothing-new", `nothing new since ${parent.key}: no pack written, 0 bytes uploaded`);
  }
  if (kept.length === 0) return done("empty", "the caches hold no complete entries; nothing saved");

  // A lease keeps a concurrent prune from deleting the packs this save reuses; a reused pack that a
  // prune already condemned (or deleted) is not relied on: its entries are packed afresh.
  const packOf = (p: Present) =>
    parent?.manifest.packs[parentRefs.get(presentId(p))?.pack as number]?.object as string;
  const leaseId = newLeaseId();
  let lease: Lease | null = null;
  if (store.capabilities.delete && store.capabilities.listAll) {
    const reusedPacks = [...new Set(reused.map(packOf))];
    lease = await takeLease(store, leaseId, ctx.key, reusedPacks);
    const unusable = await unusablePacks(store, reusedPacks);
    if (unusable.size) {
      log.info(`${unusable.size} pack(s) of ${parent?.key} are being pruned; packing their entries afresh`);
      reused = reused.filter((p) => !unusable.has(packOf(p)));
    }
  }
  // Nothing new still records the key: a manifest over the parent's packs and no pack bytes, so an
  // exact lookup of this revision hits (cache-hit, prewarm's "present") instead of falling back.
  const nothingNew = parent !== null && fresh().length === 0 && dropped === 0;
  // The plan for the entries reused now (a retry after a prune took some plans again).
  const planNow = (nothingNew: boolean) =>
    planSave({
      kept,
      reused,
      dropped,
      parent: parent?.manifest ?? null,
      parentRefs,
      nothingNew,
      settings: ctx.save,
    });
  try {
    return await writeSave(planNow(nothingNew), 0);
  } finally {
    await lease?.release();
  }

  async function writeSave(plan: SavePlan, attempt: number): Promise<SaveReport> {
    report.consolidated = plan.consolidate;
    if (plan.consolidate) {
      log.info(
        `consolidating: a chain of ${plan.chain} saves${plan.deadShare > 0 ? `, ${(plan.deadShare * 100).toFixed(0)}% dead bytes` : ""}${plan.keptLarge ? `; keeping ${plan.keptLarge} large live pack(s)` : ""}`,
      );
    }
    const written = await writePacks(ctx, plan.groups, leaseId);
    for (const w of written) report.skipped.vanished += w.vanished.length;

    const manifest = manifestFor(ctx, plan, parent?.manifest ?? null, parentRefs, written, kinds);
    const body = encodeManifest(manifest);
    const committed = await commitManifest(store, object, body);
    if (committed !== "committed") {
      if (committed === "lost-race-before") await deletePacks(store, written);
      return done(
        "lost-race",
        `key ${ctx.key} was saved by another run at the same time; its save stands, ours was ${committed === "lost-race-before" ? "discarded" : "replaced"}`,
      );
    }
    // A prune may still have deleted a reused pack (a clock hours off made our lease look expired):
    // checked once more now that the manifest protects them; the key is withdrawn and those entries
    // packed afresh rather than left pointing at a pack that is gone.
    if (lease) {
      const ours = new Set(written.map((w) => w.object));
      // Gone, not merely condemned: a condemned pack that still exists is kept by the manifest now
      // (prune re-reads manifests before it deletes, and clears the marks of referenced packs).
      const lost = await missingPacks(
        store,
        manifest.packs.map((p) => p.object).filter((o) => !ours.has(o)),
      );
      if (lost.size) {
        await store.delete(object);
        await deletePacks(store, written);
        if (attempt > 0)
          throw new StoreError(
            `${store.description}: packs of ${parent?.key} were pruned while saving ${ctx.key}, twice; the key was withdrawn`,
          );
        log.warn(
          `${lost.size} pack(s) of ${parent?.key} were pruned while this save ran (a clock off by hours?); withdrew ${ctx.key} and packing their entries afresh`,
        );
        reused = reused.filter((p) => !lost.has(packOf(p)));
        return writeSave(planNow(false), attempt + 1);
      }
    }
    writeState(
      ctx.stateFile,
      nextState(ctx.key, { key: ctx.key, scope, exact: true, manifest }, savedEntries(kept, manifest)),
    );

    report.entries = manifest.entries.length;
    report.entriesNew = written.reduce((s, w) => s + w.entries.length, 0) - plan.repacked;
    report.entriesReused = plan.stay.length;
    report.entriesDropped = plan.dropped;
    report.packsWritten = written.length;
    report.bytesUploaded = written.reduce((s, w) => s + w.size, 0) + body.length;
    for (const e of manifest.entries) {
      const c = report.caches.find((x) => x.name === e.cache);
      if (c) {
        c.entries++;
        c.bytes += e.size;
      }
    }
    // A retry that had to pack entries of pruned packs again did write something new.
    if (nothingNew && written.length === 0)
      return done(
        "nothing-new",
        `nothing new since ${parent?.key}: recorded ${ctx.key} over its packs (no pack written, ${formatBytes(body.length)} of manifest uploaded)`,
      );
    return done(
      "saved",
      `saved ${ctx.key}: ${report.entriesNew} new entries, ${report.entriesReused} reused from ${parent?.key ?? "(no parent)"}, ${plan.dropped} dropped`,
    );
  }
}

/**
 * The write phase: one pack per group, in parallel over threads (saveThreads), each built, hashed
 * and compressed on the way to the store. On any failure the packs already written are deleted.
 */
async function writePacks(ctx: JobContext, groups: Present[][], leaseId: string): Promise<WrittenPack[]> {
  // No Zstandard engine (ZstdUnavailableError, naming the fix) fails the save before any upload.
  await zstdEngine();
  const slots: (WrittenPack | undefined)[] = new Array(groups.length);
  const progress = ctx.progress?.("uploading", null);
  const { threads, zstd } = saveThreads(groups.length);
  const pool = threads > 1 ? ThreadPool.open(threads) : null;
  let next = 0;
  let failed = false;
  const lane = async () => {
    // After a failure no further pack is started: the save fails as a whole.
    while (next < groups.length && !failed) {
      const i = next++;
      const inputs: BuildInput[] = (groups[i] as Present[]).map((p) => ({
        cache: p.cache,
        kind: p.kind.kind,
        root: p.root,
        entry: p.entry,
      }));
      slots[i] = await writePack(
        ctx.store,
        packObject(ctx.scopes.write, `${leaseId}-${i}`),
        inputs,
        ctx.save.compressionLevel,
        (n) => progress?.add(n),
        pool,
        zstd,
      ).catch((e: unknown) => {
        failed = true;
        throw e;
      });
    }
  };
  try {
    const settled = await Promise.allSettled(Array.from({ length: pool ? threads : 1 }, lane));
    const written = slots.filter((w): w is WrittenPack => w !== undefined);
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) {
      await deletePacks(ctx.store, written);
      throw (failed as PromiseRejectedResult).reason;
    }
    return written;
  } finally {
    progress?.done();
    await pool?.close();
  }
}

/** Deletes packs this save wrote and will not reference (best effort: prune reaps what stays). */
async function deletePacks(store: JobContext["store"], written: WrittenPack[]): Promise<void> {
  await Promise.all(written.map((w) => store.delete(w.object).catch(() => {})));
}

function nextState(key: string, parent: LocalState["parent"], present: Present[]): LocalState {
  const index: LocalState["index"] = {};
  for (const p of present) {
    if (!p.digest) continue;
    const idx = index[p.cache] ?? {};
    idx[p.entry.name] = [p.sig, p.digest];
    index[p.cache] = idx;
  }
  return { version: 1, primaryKey: key, parent, index };
}
