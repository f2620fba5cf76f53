import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../../manifest/manifest.js";
import { type LazySave, packGroups } from "./save-groups.js";
import { isDeferred, type Present, presentId } from "./save-scan.js";

export type { LazySave } from "./save-groups.js";

/** What a save makes of the entries it found against its parent key: pure, no store, no disk. */
export interface SavePlan {
  /** Entries referenced where they already are, in the parent's packs. */
  stay: Present[];
  /** Entries to pack, grouped into packs, in a stable order. */
  groups: Present[][];
  /** Entries of the parent the caches no longer hold. */
  dropped: number;
  /** The parent's small or mostly-dead packs are rewritten with the new entries. */
  consolidate: boolean;
  /** Saves whose small packs a restore would read, counting this one. */
  chain: number;
  /** Share of the bytes in the reused packs that no entry here needs. */
  deadShare: number;
  /** Large packs kept through a consolidation. */
  keptLarge: number;
  /** Entries of the parent's packs that a consolidation packs again (not new to this key). */
  repacked: number;
  /** A lazy cache's entries packed again in frames of their own, and why; null when none were. */
  reframed: Reframed | null;
}

/**
 * Entries of a lazily restored cache that this save packs again so that the next lazy restore can
 * read them alone: `no-frames`, their packs were written before the cache was lazy (or by an engine
 * that cannot end frames), so every lazy restore read those packs whole.
 */
export interface Reframed {
  reason: "no-frames";
  entries: number;
  bytes: number;
  /** The parent's packs they came from, which the key no longer references. */
  packs: number;
}

export interface PlanSettings {
  maxChain: number;
  maxDeadShare: number;
  packBytes: number;
}

/** The parent's entries configured here, by id. */
export function parentRefsOf(parent: Manifest | null, caches: Set<string>): Map<string, EntryRef> {
  const refs = new Map<string, EntryRef>();
  for (const e of parent?.entries ?? []) if (caches.has(e.cache)) refs.set(entryId(e), e);
  return refs;
}

/** Entries whose digest the parent has as it is (reusable), and how many of the parent's are gone. */
export function matchParent(
  kept: Present[],
  parentRefs: Map<string, EntryRef>,
): { reused: Present[]; dropped: number } {
  const reused = kept.filter((p) => p.digest !== null && parentRefs.get(presentId(p))?.sha256 === p.digest);
  const reusedIds = new Set(reused.map(presentId));
  const dropped = [...parentRefs.keys()].filter((k) => !reusedIds.has(k)).length;
  return { reused, dropped };
}

/** What a save plans from: the entries found, those reused from the parent, and its settings. */
export interface PlanInput {
  kept: Present[];
  reused: Present[];
  dropped: number;
  parent: Manifest | null;
  parentRefs: Map<string, EntryRef>;
  nothingNew: boolean;
  settings: PlanSettings;
  lazy: LazySave;
}

/**
 * Decides between a delta on top of the parent's packs and a consolidation. A delta packs only the
 * fresh entries. A consolidation (when the chain of small packs grows past save.max-chain, dead bytes
 * past save.max-dead-share, or a lazy cache's entries sit in packs without frames) repacks what makes
 * the chain long, the store dead or the restore eager: small packs, the deadest large ones until the
 * key is well within its dead bound, and packs without frames, even when nothing is new. Other large
 * packs stay as they are: older keys keep referencing them, so rewriting one stores its bytes twice
 * (100 commits at 1% churn left 20 copies when every pack was rewritten). Entries a lazy restore left
 * in the store are not on disk to be packed: they stay in their packs, which stay whole.
 */
export function planSave(input: PlanInput): SavePlan {
  const { kept, reused, parent, settings, lazy } = input;
  const reusedSet = new Set(reused);
  const fresh = kept.filter((p) => !reusedSet.has(p));
  const f = packFacts(input);
  // The chain is the number of saves whose small packs a restore must read (one more if this save
  // adds packs), of those a consolidation can merge. Large packs are few by construction (each holds
  // a sixteenth of the cache or more); packs pinned by entries left in the store go once those
  // entries are used (then on disk) or evicted.
  const generations = new Set(
    [...f.used].filter((i) => !f.large.has(i) && !f.pinned.has(i)).map((i) => parent?.packs[i]?.savedBy),
  );
  const chain = generations.size + (fresh.length ? 1 : 0);
  const total = [...f.used].reduce((s, i) => s + f.bytes(i), 0);
  const deadShare = total > 0 ? 1 - reused.reduce((s, p) => s + p.size, 0) / total : 0;
  const consolidate =
    f.used.size > 0 &&
    (f.unframed.size > 0 ||
      (!input.nothingNew && (chain > settings.maxChain || deadShare > settings.maxDeadShare)));
  const keptPacks = consolidate ? packsKept(f, reused, deadShare, settings.maxDeadShare) : new Set<number>();
  const stay = consolidate ? reused.filter((p) => keptPacks.has(f.of(p))) : reused;
  const staySet = new Set(stay);
  const toPack = consolidate ? kept.filter((p) => !staySet.has(p)) : fresh;
  const reframed = toPack.filter(
    (p) => lazy.caches.has(p.cache) && reusedSet.has(p) && f.unframed.has(f.of(p)),
  );
  return {
    stay,
    groups: packGroups(toPack, settings.packBytes, lazy),
    dropped: input.dropped,
    consolidate,
    chain,
    deadShare,
    keptLarge: [...keptPacks].filter((i) => f.large.has(i)).length,
    repacked: consolidate ? reused.length - stay.length : 0,
    reframed: reframed.length
      ? {
          reason: "no-frames",
          entries: reframed.length,
          bytes: reframed.reduce((s, p) => s + p.size, 0),
          packs: f.unframed.size,
        }
      : null,
  };
}

/** The parent's packs the reused entries lie in, as a plan weighs them. */
interface PackFacts {
  /** The pack an entry lies in (its index in the parent manifest). */
  of: (p: Present) => number;
  used: Set<number>;
  /** A pack's uncompressed entry bytes, and the bytes of it still in the key. */
  bytes: (i: number) => number;
  live: Map<number, number>;
  /** Packs of a sixteenth of the pack size or of everything saved, or more: merged small packs make one, which stays. */
  large: Set<number>;
  /** Packs holding entries a lazy restore left in the store (not on disk: never packed again here). */
  pinned: Set<number>;
  /** Packs a lazy cache's entries on disk lie in without frames of their own, where this engine can write frames. */
  unframed: Set<number>;
}

function packFacts({ kept, reused, parent, parentRefs, settings, lazy }: PlanInput): PackFacts {
  const of = (p: Present) => parentRefs.get(presentId(p))?.pack as number;
  const used = new Set(reused.map(of));
  const bytes = (i: number) => parent?.packs[i]?.entryBytes ?? 0;
  const live = new Map<number, number>();
  for (const p of reused) live.set(of(p), (live.get(of(p)) ?? 0) + p.size);
  const bound =
    Math.min(
      settings.packBytes,
      kept.reduce((n, p) => n + p.size, 0),
    ) / 16;
  const unframed = new Set<number>();
  for (const p of reused)
    if (lazy.canFrame && lazy.caches.has(p.cache) && !isDeferred(p) && !parentRefs.get(presentId(p))?.frame)
      unframed.add(of(p));
  return {
    of,
    used,
    bytes,
    live,
    large: new Set([...used].filter((i) => bytes(i) >= bound)),
    pinned: new Set(reused.filter(isDeferred).map(of)),
    unframed,
  };
}

/**
 * The packs a consolidation keeps: large ones (with frames, for a lazy cache), and packs holding
 * entries left in the store (they stay referenced anyway). Past the dead bound, the deadest large
 * packs go, until at most half the bound is dead: well within it, so the next saves do not repack.
 */
function packsKept(f: PackFacts, reused: Present[], deadShare: number, maxDeadShare: number): Set<number> {
  const keep = [...f.large].filter((i) => !f.unframed.has(i) && !f.pinned.has(i));
  const dead = (i: number) => f.bytes(i) - (f.live.get(i) ?? 0);
  keep.sort((a, b) => dead(b) / f.bytes(b) - dead(a) / f.bytes(a) || a - b);
  const liveBytes = reused.reduce((s, p) => s + p.size, 0);
  let deadKept = keep.reduce((s, i) => s + dead(i), 0);
  while (deadShare > maxDeadShare && keep.length && deadKept > (maxDeadShare / 2) * (liveBytes + deadKept))
    deadKept -= dead(keep.shift() as number);
  return new Set([...keep, ...f.pinned]);
}
