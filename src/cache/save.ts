import fs from "node:fs";
import { performance } from "node:perf_hooks";
import { IntegrityError, StoreError } from "../errors.js";
import { formatBytes } from "../format.js";
import type { CacheFolder, CacheKind, CacheKindName, FoundEntry } from "../kinds/kind.js";
import { entryId } from "../manifest/entry-id.js";
import {
  decodeManifest,
  type EntryRef,
  encodeManifest,
  MANIFEST_FORMAT,
  type Manifest,
  type PackRef,
} from "../manifest/manifest.js";
import { EntryDigest } from "../pack/entry-digest.js";
import { chunks, closeEntry, openEntry } from "../pack/entry-source.js";
import { type BuildInput, type WrittenPack, writePack } from "../pack/pack-writer.js";
import { saveThreads, ThreadPool } from "../pack/thread-pool.js";
import { manifestObject, packObject } from "../store/layout.js";
import { VERSION } from "../version.js";
import { folderKind, scanFolder } from "./cache-folder.js";
import { entrySignature } from "./entry-signature.js";
import type { JobContext } from "./job-context.js";
import { type LocalState, readState, writeState } from "./local-state.js";
import { findManifest, type Match } from "./lookup.js";
import { type Lease, newLeaseId, takeLease, unusablePacks } from "./pack-lease.js";

export type SaveOutcome = "saved" | "nothing-new" | "key-exists" | "empty" | "lost-race";

export interface SaveReport {
  primaryKey: string;
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
  skipped: {
    incomplete: number;
    tempDirs: number;
    lockFiles: number;
    /** Precompiled headers and other files valid only on the machine that built them. */
    localFiles: number;
    otherFiles: number;
    vanished: number;
  };
  seconds: number;
  caches: { name: string; entries: number; bytes: number }[];
}

interface Present {
  cache: string;
  kind: CacheKind;
  root: string;
  entry: FoundEntry;
  sig: string;
  digest: string | null;
  size: number;
}

const id = (cache: string, name: string) => entryId({ cache, name });

/** A folder that gives nothing to save is worth a warning that names it and says why. */
function nothingToSave(ctx: JobContext, c: CacheFolder, why: string): void {
  ctx.log.warn(`path ${c.path} (cache ${c.name}): nothing to save: ${why}`);
}

/**
 * Saves the caches under the primary key in this run's scope. Only entries the parent manifest lacks
 * (or whose digest changed) are packed and uploaded; the rest are referenced in the parent's packs.
 * Incomplete entries, compiler temp folders and locks are never saved. Keys are immutable.
 */
export async function save(ctx: JobContext): Promise<SaveReport> {
  const t0 = performance.now();
  const { store, log } = ctx;
  const scope = ctx.scopes.write;
  const report: SaveReport = {
    primaryKey: ctx.key,
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
  const present: Present[] = [];
  const kinds = new Map<string, CacheKindName>();
  for (const c of ctx.caches) {
    const kind = folderKind(c);
    if (!kind) {
      nothingToSave(ctx, c, fs.existsSync(c.path) ? "the folder is empty" : "the folder does not exist");
      continue;
    }
    kinds.set(c.name, kind.kind);
    const scan = await scanFolder(c, kind);
    const before = present.length;
    let incomplete = 0;
    report.skipped.tempDirs += scan.tempDirs;
    report.skipped.lockFiles += scan.lockFiles;
    report.skipped.localFiles += scan.localFiles;
    report.skipped.otherFiles += scan.otherFiles;
    const known = state?.index[c.name] ?? {};
    for (const entry of scan.entries) {
      const sig = entrySignature(entry);
      const k = known[entry.name];
      const size = entry.files.reduce((s, f) => s + f.size, 0);
      if (k && k[0] === sig) {
        present.push({ cache: c.name, kind, root: c.path, entry, sig, digest: k[1], size });
        continue;
      }
      const why = kind.incompleteReason(c.path, entry);
      if (why) {
        report.skipped.incomplete++;
        incomplete++;
        log.debug(`not saving ${c.name}/${entry.name}: ${why}`);
        continue;
      }
      present.push({ cache: c.name, kind, root: c.path, entry, sig, digest: null, size });
    }
    if (present.length === before) {
      nothingToSave(
        ctx,
        c,
        incomplete
          ? `its ${incomplete} entries are incomplete (compiles that did not finish)`
          : scan.filtered
            ? `the patterns left out all ${scan.filtered} of its entries${c.exclude?.length ? ` (excluded by ${c.exclude.map((x) => `!${x}`).join(", ")})` : ""}`
            : scan.entries.length === 0 && fs.existsSync(c.path)
              ? "the folder has nothing a save keeps (only temp folders, locks or links)"
              : "the folder does not exist",
      );
    }
  }

  const parentRefs = new Map<string, EntryRef>();
  const configured = new Set(ctx.caches.map((c) => c.name));
  for (const e of parent?.manifest.entries ?? [])
    if (configured.has(e.cache)) parentRefs.set(id(e.cache, e.name), e);

  // An entry the parent also has is hashed to tell a changed entry from a touched one.
  const kept: Present[] = [];
  for (const p of present) {
    if (p.digest === null && parentRefs.has(id(p.cache, p.entry.name))) {
      p.digest = hashEntry(p);
      if (p.digest === null) {
        report.skipped.vanished++;
        continue;
      }
    }
    kept.push(p);
  }
  let reused = kept.filter(
    (p) => p.digest !== null && parentRefs.get(id(p.cache, p.entry.name))?.sha256 === p.digest,
  );
  const reusedIds = new Set(reused.map((p) => id(p.cache, p.entry.name)));
  const dropped = [...parentRefs.keys()].filter((k) => !reusedIds.has(k)).length;
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
    parent?.manifest.packs[parentRefs.get(id(p.cache, p.entry.name))?.pack as number]?.object as string;
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
  try {
    return await writeSave(reused, fresh(), nothingNew);
  } finally {
    await lease?.release();
  }

  /** The parent's pack an entry is in. */
  function packIndex(p: Present): number {
    return parentRefs.get(id(p.cache, p.entry.name))?.pack as number;
  }

  /**
   * Packs worth keeping through a consolidation: large (a sixteenth of the pack size or of everything
   * saved) and live (no more dead than save.max-dead-share allows). Each delta is rewritten about
   * once: merged small packs make a large one, which stays.
   */
  function largeLivePacks(reused: Present[], all: Present[]): Set<number> {
    const live = new Map<number, number>();
    for (const p of reused) live.set(packIndex(p), (live.get(packIndex(p)) ?? 0) + p.size);
    const total = all.reduce((n, p) => n + p.size, 0);
    const large = Math.min(ctx.save.packBytes, total) / 16;
    const out = new Set<number>();
    for (const [i, bytes] of live) {
      const pack = parent?.manifest.packs[i];
      if (pack && pack.entryBytes >= large && bytes / pack.entryBytes >= 1 - ctx.save.maxDeadShare)
        out.add(i);
    }
    return out;
  }

  async function writeSave(reused: Present[], fresh: Present[], nothingNew: boolean): Promise<SaveReport> {
    // Decide between a delta on top of the parent's packs and one consolidated pack set.
    const usedPacks = new Set(reused.map((p) => parentRefs.get(id(p.cache, p.entry.name))?.pack as number));
    // The chain is the number of saves whose small packs a restore must read (one more if this save
    // adds packs). Large packs are few by construction (each holds a sixteenth of the cache or more).
    const large = largeLivePacks(reused, [...reused, ...fresh]);
    const generations = new Set(
      [...usedPacks].filter((i) => !large.has(i)).map((i) => parent?.manifest.packs[i]?.savedBy),
    );
    const chain = generations.size + (fresh.length ? 1 : 0);
    let deadShare = 0;
    if (parent && usedPacks.size) {
      const total = [...usedPacks].reduce((s, i) => s + (parent.manifest.packs[i]?.entryBytes ?? 0), 0);
      const live = reused.reduce((s, p) => s + p.size, 0);
      deadShare = total > 0 ? 1 - live / total : 0;
    }
    const consolidate =
      !nothingNew && usedPacks.size > 0 && (chain > ctx.save.maxChain || deadShare > ctx.save.maxDeadShare);
    // Consolidating repacks what makes the chain long or the store dead: small packs and mostly-dead
    // ones. A large pack that is still mostly live stays as it is: older keys keep referencing it, so
    // rewriting it would store its bytes twice (100 commits at 1% churn would leave 20 copies).
    const keptLarge = consolidate ? large : new Set<number>();
    const stay = consolidate ? reused.filter((p) => keptLarge.has(packIndex(p))) : reused;
    const toPack = consolidate ? kept.filter((p) => !stay.includes(p)) : fresh;
    const referenced = stay;
    report.consolidated = consolidate;
    if (consolidate) {
      log.info(
        `consolidating: a chain of ${chain} saves${deadShare > 0 ? `, ${(deadShare * 100).toFixed(0)}% dead bytes` : ""}${keptLarge.size ? `; keeping ${keptLarge.size} large live pack(s)` : ""}`,
      );
    }

    // Write the new packs.
    // Packs are written in parallel, one per thread; `written` keeps their order.
    const groups = splitBySize(toPack, packTarget(toPack, ctx.save.packBytes));
    const written: WrittenPack[] = [];
    const slots: (WrittenPack | undefined)[] = new Array(groups.length);
    const progress = ctx.progress?.("uploading", null);
    const { threads, zstd } = saveThreads(groups.length);
    const pool = threads > 1 ? ThreadPool.open(threads) : null;
    try {
      let next = 0;
      const lane = async () => {
        while (next < groups.length) {
          const i = next++;
          const inputs: BuildInput[] = (groups[i] as Present[]).map((p) => ({
            cache: p.cache,
            kind: p.kind.kind,
            root: p.root,
            entry: p.entry,
          }));
          const w = await writePack(
            store,
            packObject(scope, `${leaseId}-${i}`),
            inputs,
            ctx.save.compressionLevel,
            (n) => progress?.add(n),
            pool,
            zstd,
          );
          slots[i] = w;
        }
      };
      const settled = await Promise.allSettled(Array.from({ length: pool ? threads : 1 }, lane));
      for (const w of slots) if (w) written.push(w);
      const failed = settled.find((r) => r.status === "rejected");
      if (failed) throw (failed as PromiseRejectedResult).reason;
      for (const w of written) report.skipped.vanished += w.vanished.length;
    } catch (e) {
      await Promise.all(written.map((w) => store.delete(w.object).catch(() => {})));
      throw e;
    } finally {
      progress?.done();
      await pool?.close();
    }

    // The manifest: parent packs still referenced (re-indexed), then the new ones.
    const packs: PackRef[] = [];
    const remap = new Map<number, number>();
    const entries: EntryRef[] = [];
    for (const p of referenced) {
      const ref = parentRefs.get(id(p.cache, p.entry.name)) as EntryRef;
      let idx = remap.get(ref.pack);
      if (idx === undefined) {
        idx = packs.length;
        remap.set(ref.pack, idx);
        packs.push(parent?.manifest.packs[ref.pack] as PackRef);
      }
      entries.push({ ...ref, pack: idx });
    }
    const digests = new Map<string, string>();
    for (const w of written) {
      const idx = packs.length;
      packs.push({
        object: w.object,
        sha256: w.sha256,
        size: w.size,
        entryBytes: w.entryBytes,
        entries: w.entries.length,
        savedBy: ctx.key,
      });
      for (const e of w.entries) {
        entries.push({ ...e, pack: idx });
        digests.set(id(e.cache, e.name), e.sha256);
      }
    }
    entries.sort((a, b) => (id(a.cache, a.name) < id(b.cache, b.name) ? -1 : 1));
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      key: ctx.key,
      prefix: ctx.prefix,
      stackId: ctx.stack.stackId,
      stack: ctx.stack.components,
      revision: ctx.revision,
      scope,
      createdAt: new Date().toISOString(),
      producer: `kcache ${VERSION}`,
      parent: consolidate && stay.length === 0 ? null : (parent?.key ?? null),
      caches: ctx.caches
        .filter((c) => kinds.has(c.name))
        .map((c) => ({ name: c.name, kind: kinds.get(c.name) as CacheKindName })),
      packs,
      entries,
    };
    const body = encodeManifest(manifest);
    if (!(await store.createIfAbsent(object, body))) {
      await Promise.all(written.map((w) => store.delete(w.object).catch(() => {})));
      // A store that answers "exists" to everything must not pass for a lost race.
      if (!(await existingManifest(store, object)))
        throw new StoreError(`${store.description}: refused to create ${object} but holds no such manifest`);
      return done(
        "lost-race",
        `key ${ctx.key} was saved by another run at the same time; its save stands, ours was discarded`,
      );
    }
    // Read back: a store that acknowledges writes it does not keep is a fault, and on a server that
    // ignores If-None-Match another saver's manifest may have replaced ours (then its save stands).
    const stored = await store.read(object);
    if (!stored?.equals(body)) {
      if (await existingManifest(store, object))
        return done(
          "lost-race",
          `key ${ctx.key} was saved by another run at the same time; its save stands, ours was replaced`,
        );
      throw new StoreError(`${store.description}: ${object} does not read back as written`);
    }

    for (const p of kept) if (p.digest === null) p.digest = digests.get(id(p.cache, p.entry.name)) ?? null;
    const savedIds = new Set(entries.map((e) => id(e.cache, e.name)));
    const savedPresent = kept.filter((p) => savedIds.has(id(p.cache, p.entry.name)));
    writeState(
      ctx.stateFile,
      nextState(ctx.key, { key: ctx.key, scope, exact: true, manifest }, savedPresent),
    );

    report.entries = entries.length;
    report.entriesNew =
      written.reduce((s, w) => s + w.entries.length, 0) - (consolidate ? reused.length - stay.length : 0);
    report.entriesReused = stay.length;
    report.entriesDropped = dropped;
    report.packsWritten = written.length;
    report.bytesUploaded = written.reduce((s, w) => s + w.size, 0) + body.length;
    for (const e of entries) {
      const c = report.caches.find((x) => x.name === e.cache);
      if (c) {
        c.entries++;
        c.bytes += e.size;
      }
    }
    if (nothingNew)
      return done(
        "nothing-new",
        `nothing new since ${parent?.key}: recorded ${ctx.key} over its packs (no pack written, ${formatBytes(body.length)} of manifest uploaded)`,
      );
    return done(
      "saved",
      `saved ${ctx.key}: ${report.entriesNew} new entries, ${report.entriesReused} reused from ${parent?.key ?? "(no parent)"}, ${dropped} dropped`,
    );
  }
}

/**
 * Whether a valid manifest is stored at `object`. One that is there but does not verify (damaged, or
 * a store answering garbage) is a data fault, never taken for "the key exists".
 */
async function existingManifest(store: JobContext["store"], object: string): Promise<boolean> {
  const data = await store.read(object);
  if (!data) return false;
  try {
    decodeManifest(data, object);
    return true;
  } catch (e) {
    if (!(e instanceof IntegrityError)) throw e;
    throw new IntegrityError(
      `${store.description}: ${e.message}; nothing saved (delete the object, or check the store's endpoint)`,
    );
  }
}

/** Digest of an entry as it would be packed, without packing it; null when its files vanished. */
function hashEntry(p: Present): string | null {
  const files = openEntry(p.kind, p.root, p.entry);
  if (!files) return null;
  const d = new EntryDigest();
  try {
    for (const f of files) {
      d.beginFile(f.rel, f.size);
      for (const c of chunks(f)) d.update(c);
    }
  } finally {
    closeEntry(files);
  }
  return d.digest();
}

/** Packs of at least this many bytes are worth a thread of their own. */
const MIN_PACK_BYTES = 8 * 1024 * 1024;
/** A save splits into about this many packs, when big enough, so threads can share the work. */
const PACKS_FOR_THREADS = 8;

/**
 * The uncompressed size to split new entries by: save.pack-mib at most, but small enough that a large
 * save makes about eight packs of 8 MiB or more, which restores and later saves spread over threads.
 * It depends only on the bytes saved, never on this machine, so every runner splits alike.
 */
function packTarget(items: Present[], packBytes: number): number {
  const total = items.reduce((n, p) => n + p.size, 0);
  return Math.min(packBytes, Math.max(MIN_PACK_BYTES, Math.ceil(total / PACKS_FOR_THREADS)));
}

/** Groups entries into packs of about `target` uncompressed bytes, in a stable order. */
function splitBySize(items: Present[], target: number): Present[][] {
  const sorted = [...items].sort((a, b) => (id(a.cache, a.entry.name) < id(b.cache, b.entry.name) ? -1 : 1));
  const groups: Present[][] = [];
  let group: Present[] = [];
  let bytes = 0;
  for (const p of sorted) {
    if (group.length && bytes + p.size > target) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(p);
    bytes += p.size;
  }
  if (group.length) groups.push(group);
  return groups;
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
