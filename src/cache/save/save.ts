import { StoreError } from "../../errors.js";
import { formatBytes } from "../../format.js";
import type { CacheFolder } from "../../kinds/kind.js";
import { type EntryRef, encodeManifest, type Manifest } from "../../manifest/manifest.js";
import type { WrittenPack } from "../../pack/write/pack-writer.js";
import { manifestObject } from "../../store/layout.js";
import { autotuneParts } from "../autotune/provenance.js";
import { fault, StrictFaultError } from "../faults.js";
import type { JobContext } from "../job-context.js";
import { keyToSave, unlessThisKey } from "../key-wholeness.js";
import { carriedOver } from "../lazy/carried-over.js";
import { jobCaches, type LocalState, readState, stateAfterSave, writeState } from "../local-state.js";
import { findManifest, type Match } from "../lookup.js";
import { type Lease, missingPacks, newLeaseId, takeLease, unusablePacks } from "../pack-lease.js";
import { savePlan } from "../plan/plan-store.js";
import { assessUsage, type SaveOptions, type UsagePlan } from "../usage/save-usage.js";
import { jobsOwn } from "./save-attribution.js";
import { lazySave, planLines } from "./save-lazy.js";
import { commitManifest, deleteUnnamed, manifestFor, savedEntries } from "./save-manifest.js";
import { deletePacks, writePacks } from "./save-packs.js";
import { type LazySave, matchParent, parentRefsOf, planSave, type SavePlan } from "./save-plan.js";
import {
  countSaved,
  emptySaveReport,
  nothingToSave,
  type SaveOutcome,
  type SaveReport,
} from "./save-report.js";
import { type Present, presentId, scanForSave } from "./save-scan.js";
import { Unrelocatable } from "./save-unrelocatable.js";

export type { HookUsage, SaveOptions } from "../usage/save-usage.js";
export type { SaveOutcome, SaveReport } from "./save-report.js";

/**
 * Saves the caches under the primary key in this run's scope, in phases: scan the folders
 * (save-scan.ts), plan what is reused, new, dropped or consolidated (save-plan.ts, pure), write the
 * new packs (save-packs.ts), build the manifest and commit it (save-manifest.ts), then record the
 * local state. Only entries the parent manifest lacks (or whose digest changed) are packed and
 * uploaded; the rest are referenced in the parent's packs. Incomplete entries, compiler temp folders
 * and locks are never saved. Keys are immutable. `state`: the local state, if the caller read it.
 */
export async function save(ctx: JobContext, opts: SaveOptions = {}, state = readState(ctx.stateFile)) {
  const ours = state?.primaryKey === ctx.key ? state : null; // isolate: the job's own folder is saved
  const work: JobContext = { ...ctx, caches: jobCaches(ctx.caches, ours) };
  const run = new SaveRun(work, opts, ctx.caches);
  const report = await run.run(state, ours).finally(() => run.forms.dispose());
  const failing = report.faults.find((f) => ctx.strict.fails(f.code));
  if (failing)
    throw new StrictFaultError(`save met a fault (--strict): ${failing.code}: ${failing.message}`, failing);
  return report;
}

/** One save's phases over the state they share: the parent it builds on, the entries kept and reused. */
class SaveRun {
  private readonly t0 = performance.now();
  private readonly scope: string;
  private readonly object: string;
  readonly report: SaveReport;
  private parent: Match | null = null;
  private parentRefs = new Map<string, EntryRef>();
  private kept: Present[] = [];
  private reused: Present[] = [];
  private dropped = 0;
  private usage: UsagePlan | null = null;
  private lazy: LazySave = { caches: new Set(), canFrame: false, usedNow: new Set() };
  private kinds: Awaited<ReturnType<typeof scanForSave>>["kinds"] = new Map();
  private readonly leaseId = newLeaseId();
  private lease: Lease | null = null;
  private readonly unrelocatable = new Unrelocatable();
  readonly forms = this.unrelocatable.forms;
  /** How the job began (its restore's record), kept in the state for the end of the job. */
  private job: LocalState["job"];

  /** `roots`: the runner's folders, which the job's own came from (isolate): other jobs' markers are there. */
  constructor(
    private readonly ctx: JobContext,
    private readonly opts: SaveOptions,
    private readonly roots: CacheFolder[],
  ) {
    this.scope = ctx.scopes.write;
    this.object = manifestObject(this.scope, ctx.key);
    this.report = emptySaveReport(ctx);
  }

  private done(outcome: SaveOutcome, message: string): SaveReport {
    this.unrelocatable.report(this.ctx.log, this.report);
    this.report.rewriter = { ...this.forms.counts };
    this.report.outcome = outcome;
    this.report.message = message;
    this.report.seconds = (performance.now() - this.t0) / 1000;
    return this.report;
  }

  private keyExists(why = `already exists in scope ${this.scope}`): SaveReport {
    return this.done("key-exists", `key ${this.ctx.key} ${why}; keys are immutable, nothing saved`);
  }

  async run(state: LocalState | null, ours: LocalState | null): Promise<SaveReport> {
    const { ctx } = this;
    this.job = ours?.job;
    const restoredExactly = ours?.parent?.exact === true && ours.parent.scope === this.scope;
    const { stop, replacing } = await keyToSave(ctx, this.object, this.scope, restoredExactly);
    if (stop) return this.keyExists(stop);
    // A restore that missed (or only looked) left no parent: one saved since is built on.
    const parent = unlessThisKey(ours?.parent, ctx.key, this.scope) ?? (await findManifest(ctx));
    this.parent = parent;
    this.report.parentKey = parent?.key ?? null;
    // Another run saved this very key since we looked (a race): it stands.
    if (!replacing && parent?.key === ctx.key && parent.scope === this.scope) return this.keyExists();

    await this.scan(state, ours);
    if (!replacing && parent && parent.key === ctx.key && this.fresh().length === 0 && this.unchanged()) {
      // This very key, visible from another scope (a pull request that restored the default branch's).
      const after = stateAfterSave(ctx.key, ours?.parent ?? parent, this.kept, ours?.job);
      writeState(ctx.stateFile, after, ctx.log);
      Object.assign(this.report, { entries: this.kept.length, entriesReused: this.reused.length });
      return this.done("nothing-new", `nothing new since ${parent.key}: no pack written, 0 bytes uploaded`);
    }
    if (this.kept.length === 0) return this.done("empty", nothingToSave(this.report));
    await this.takeLease();
    try {
      // Nothing new still records the key: a manifest over the parent's packs and no pack bytes, so an
      // exact lookup of this revision hits (cache-hit, prewarm's "present") instead of falling back.
      const nothingNew = parent !== null && this.fresh().length === 0 && this.unchanged();
      return await this.writeSave(this.plan(nothingNew), nothingNew, 0);
    } finally {
      await this.lease?.release();
    }
  }

  private fresh = (): Present[] => this.kept.filter((p) => !this.reused.includes(p));

  /** No entry of the parent's is gone from the folders or evicted. */
  private unchanged = (): boolean => this.dropped === 0 && !this.usage?.evicted.size;

  /**
   * Scans the caches, reusing digests of entries whose stats match what the last restore or save
   * recorded, and works out which entries the job used (`ours`: the state this job's restore left).
   * Entries evicted for going unused are left out of the key from here on.
   */
  private async scan(state: LocalState | null, ours: LocalState | null): Promise<void> {
    const { present: scanned, kinds } = await scanForSave(this.ctx, state, this.report.skipped);
    this.kinds = kinds;
    const names = new Set(this.ctx.caches.map((c) => c.name));
    this.parentRefs = parentRefsOf(this.parent?.manifest ?? null, names);
    const folders = { scanned, kinds, parentRefs: this.parentRefs };
    const present = carriedOver(this.ctx, ours?.job, folders, this.report);
    // An entry the parent also has is hashed to tell a changed entry from a touched one.
    const digests = this.unrelocatable.hashAll(
      present.filter((p) => p.digest === null && this.parentRefs.has(presentId(p))),
    );
    for (const p of present) {
      const digest = digests.get(p);
      if (digest === false) continue;
      if (digest === null) this.report.skipped.vanished++;
      else this.kept.push(digest === undefined ? p : Object.assign(p, { digest }));
    }
    ({ reused: this.reused, dropped: this.dropped } = matchParent(this.kept, this.parentRefs));
    // Entries the restored key vouches for are reused above; of the rest, only the job's own go up.
    const found = { kept: this.kept, reused: this.reused, ours, roots: this.roots, hook: this.opts.hook };
    this.kept = jobsOwn(this.ctx, found, this.report);
    this.usage = assessUsage({
      ctx: this.ctx,
      state: ours,
      opts: this.opts,
      parent: this.parent?.manifest ?? null,
      parentRefs: this.parentRefs,
      kept: this.kept,
      reused: this.reused,
    });
    this.report.usage = this.usage.report;
    const kernels = (ps: Present[]) => ps.filter((p) => p.kind.isKernel(p.entry)).length;
    this.report.kernels = { found: kernels(this.reused), new: kernels(this.fresh()) };
    const evicted = this.usage.evicted;
    if (evicted.size) {
      this.kept = this.kept.filter((p) => !evicted.has(presentId(p)));
      this.reused = this.reused.filter((p) => !evicted.has(presentId(p)));
    }
    this.lazy = await lazySave(this.ctx, this.usage);
  }

  private packOf(p: Present): string {
    return this.parent?.manifest.packs[this.parentRefs.get(presentId(p))?.pack as number]?.object as string;
  }

  /** A lease keeps a prune from deleting the packs reused; a pack already condemned (or gone) is packed afresh. */
  private async takeLease(): Promise<void> {
    const { store, log } = this.ctx;
    if (!(store.capabilities.delete && store.capabilities.listAll)) return;
    const reusedPacks = [...new Set(this.reused.map((p) => this.packOf(p)))];
    this.lease = await takeLease(store, this.leaseId, this.ctx.key, reusedPacks);
    const refs = this.parent?.manifest.packs.filter((p) => reusedPacks.includes(p.object)) ?? [];
    const unusable = await unusablePacks(store, refs);
    if (unusable.size) {
      log.info(
        `${unusable.size} pack(s) of ${this.parent?.key} are being pruned, gone or damaged in the store; packing their entries afresh`,
      );
      this.reused = this.reused.filter((p) => !unusable.has(this.packOf(p)));
    }
  }

  /** The plan for the entries reused now (a retry after a prune plans again). */
  private plan(nothingNew: boolean): SavePlan {
    return planSave({
      kept: this.kept,
      reused: this.reused,
      dropped: this.dropped,
      parent: this.parent?.manifest ?? null,
      parentRefs: this.parentRefs,
      nothingNew,
      settings: this.ctx.save,
      lazy: this.lazy,
    });
  }

  private async writeSave(plan: SavePlan, nothingNew: boolean, attempt: number): Promise<SaveReport> {
    const { ctx, report } = this;
    report.consolidated = plan.consolidate;
    report.reframed = plan.reframed;
    for (const line of planLines(plan)) ctx.log.info(line);
    const written = await writePacks(ctx, plan.groups, this.leaseId, this.forms);
    for (const w of written) report.skipped.vanished += w.vanished.length;
    this.unrelocatable.fromPacks(written);
    const manifest = manifestFor(ctx, {
      plan,
      parent: this.parent?.manifest ?? null,
      parentRefs: this.parentRefs,
      written,
      kinds: this.kinds,
      usage: this.usage as UsagePlan,
      autotune: autotuneParts(ctx, this.kept, this.opts.hook, (this.usage as UsagePlan).now.at, this.job),
    });
    const body = encodeManifest(manifest);
    const committed = await commitManifest(ctx.store, this.object, body);
    if (committed !== "committed") {
      if (committed === "lost-race-before") await deleteUnnamed(ctx.store, this.object, written);
      return this.done(
        "lost-race",
        `key ${ctx.key} was saved by another run at the same time; its save stands, ours was ${committed === "lost-race-before" ? "discarded" : "replaced"}`,
      );
    }
    if (await this.withdrawnForPrunedPacks(manifest, written, attempt))
      return this.writeSave(this.plan(false), false, attempt + 1);
    const saved = { key: ctx.key, scope: this.scope, exact: true, manifest };
    const after = stateAfterSave(ctx.key, saved, savedEntries(this.kept, manifest), this.job);
    writeState(ctx.stateFile, after, ctx.log);
    countSaved(report, plan, manifest, written, body.length);
    await savePlan(ctx, this.scope, this.parent, this.opts.hook?.plan, this.opts.prewarmed);
    // A retry that had to pack entries of pruned packs again did write something new.
    if (nothingNew && written.length === 0)
      return this.done(
        "nothing-new",
        `nothing new since ${this.parent?.key}: recorded ${ctx.key} over its packs (no pack written, ${formatBytes(body.length)} of manifest uploaded)`,
      );
    return this.done(
      "saved",
      `saved ${ctx.key}: ${report.entriesNew} new entries, ${report.entriesReused} reused from ${this.parent?.key ?? "(no parent)"}, ${plan.dropped} dropped${report.usage.evicted.entries ? `, ${report.usage.evicted.entries} evicted unused (${formatBytes(report.usage.evicted.bytes)})` : ""}${plan.reframed ? `, ${plan.reframed.entries} packed again in frames (restore: lazy)` : ""}`,
    );
  }

  /**
   * A prune may still have deleted a reused pack (a clock hours off made our lease look expired):
   * checked once more now that the manifest protects them. The key is withdrawn and those entries
   * packed afresh (true: write again) rather than left pointing at a pack that is gone.
   */
  private async withdrawnForPrunedPacks(
    manifest: Manifest,
    written: WrittenPack[],
    attempt: number,
  ): Promise<boolean> {
    if (!this.lease) return false;
    const { store, log, key } = this.ctx;
    const ours = new Set(written.map((w) => w.object));
    // Gone, not merely condemned: a condemned pack that still exists is kept by the manifest now
    // (prune re-reads manifests before it deletes, and clears the marks of referenced packs).
    const lost = await missingPacks(
      store,
      manifest.packs.map((p) => p.object).filter((o) => !ours.has(o)),
    );
    if (lost.size === 0) return false;
    await store.delete(this.object);
    await deletePacks(store, written);
    if (attempt > 0)
      throw new StoreError(
        `${store.description}: packs of ${this.parent?.key} were pruned while saving ${key}, twice; the key was withdrawn`,
      );
    const message = `${lost.size} pack(s) of ${this.parent?.key} were pruned while this save ran (a clock off by hours?); withdrew ${key} and packing their entries afresh`;
    log.warn(message);
    this.report.faults.push(fault("packs-pruned", message));
    this.reused = this.reused.filter((p) => !lost.has(this.packOf(p)));
    return true;
  }
}
