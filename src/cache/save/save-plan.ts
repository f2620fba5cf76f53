import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../../manifest/manifest.js";
import { isDeferred, type Present, presentId } from "./save-scan.js";

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
  /** Large live packs kept through a consolidation. */
  keptLarge: number;
  /** Entries of the parent's packs that a consolidation packs again (not new to this key). */
  repacked: number;
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

/**
 * Decides between a delta on top of the parent's packs and a consolidation. A delta packs only the
 * fresh entries. A consolidation (when the chain of small packs grows past save.max-chain or dead
 * bytes past save.max-dead-share) repacks what makes the chain long or the store dead: small packs
 * and mostly-dead ones. A large pack that is still mostly live stays as it is: older keys keep
 * referencing it, so rewriting it would store its bytes twice (100 commits at 1% churn would leave
 * 20 copies). Entries a lazy restore left in the store are not on disk to be packed: they stay in
 * their packs, which stay whole.
 */
export function planSave(input: {
  kept: Present[];
  reused: Present[];
  dropped: number;
  parent: Manifest | null;
  parentRefs: Map<string, EntryRef>;
  nothingNew: boolean;
  settings: PlanSettings;
}): SavePlan {
  const { kept, reused, parent, parentRefs, settings } = input;
  const fresh = kept.filter((p) => !reused.includes(p));
  const packIndex = (p: Present) => parentRefs.get(presentId(p))?.pack as number;
  const usedPacks = new Set(reused.map(packIndex));
  // Packs holding entries a lazy restore left in the store: a consolidation cannot merge them.
  const pinned = new Set(reused.filter(isDeferred).map(packIndex));
  // The chain is the number of saves whose small packs a restore must read (one more if this save
  // adds packs), of those a consolidation can merge. Large packs are few by construction (each holds
  // a sixteenth of the cache or more); pinned ones go once their entries are used (then on disk) or
  // evicted.
  const large = largeLivePacks();
  const generations = new Set(
    [...usedPacks].filter((i) => !large.has(i) && !pinned.has(i)).map((i) => parent?.packs[i]?.savedBy),
  );
  const chain = generations.size + (fresh.length ? 1 : 0);
  let deadShare = 0;
  if (parent && usedPacks.size) {
    const total = [...usedPacks].reduce((s, i) => s + (parent.packs[i]?.entryBytes ?? 0), 0);
    const live = reused.reduce((s, p) => s + p.size, 0);
    deadShare = total > 0 ? 1 - live / total : 0;
  }
  const consolidate =
    !input.nothingNew &&
    usedPacks.size > 0 &&
    (chain > settings.maxChain || deadShare > settings.maxDeadShare);
  const keptLarge = consolidate ? large : new Set<number>();
  const stay = consolidate
    ? reused.filter((p) => keptLarge.has(packIndex(p)) || pinned.has(packIndex(p)))
    : reused;
  const toPack = consolidate ? kept.filter((p) => !stay.includes(p)) : fresh;
  return {
    stay,
    groups: splitBySize(toPack, packTarget(toPack, settings.packBytes)),
    dropped: input.dropped,
    consolidate,
    chain,
    deadShare,
    keptLarge: keptLarge.size,
    repacked: consolidate ? reused.length - stay.length : 0,
  };

  /**
   * Packs worth keeping through a consolidation: large (a sixteenth of the pack size or of everything
   * saved) and live (no more dead than save.max-dead-share allows). Each delta is rewritten about
   * once: merged small packs make a large one, which stays.
   */
  function largeLivePacks(): Set<number> {
    const live = new Map<number, number>();
    for (const p of reused) live.set(packIndex(p), (live.get(packIndex(p)) ?? 0) + p.size);
    const total = kept.reduce((n, p) => n + p.size, 0);
    const large = Math.min(settings.packBytes, total) / 16;
    const out = new Set<number>();
    for (const [i, bytes] of live) {
      const pack = parent?.packs[i];
      if (pack && pack.entryBytes >= large && bytes / pack.entryBytes >= 1 - settings.maxDeadShare)
        out.add(i);
    }
    return out;
  }
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
  const sorted = [...items].sort((a, b) => (presentId(a) < presentId(b) ? -1 : 1));
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
