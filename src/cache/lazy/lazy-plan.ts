import type { EntryRef, Manifest } from "../../manifest/manifest.js";

/** An entry of a manifest that lies in frames of its own in its pack. */
export type FramedRef = EntryRef & { frame: [number, number] };

/** How a lazy restore takes a key's entries (those not already in place). */
export interface LazyPlan {
  /** Read with their whole pack, as an eager restore does. */
  eager: EntryRef[];
  /** Placed before the job by ranged reads of their frames: the entries recent jobs used. */
  prefetch: FramedRef[];
  /** Left in the store, each fetched alone when the job looks it up. */
  deferred: FramedRef[];
}

/**
 * A pack whose used entries hold at least this share of its bytes is read whole: its other entries
 * cost little more than the ranged reads would, and come without a lookup's wait.
 */
const WHOLE_PACK_SHARE = 0.5;

/**
 * Splits `wanted` (a key's entries not in place) for a lazy restore of the caches `lazy` names.
 * An entry recent jobs used is one the key's last save recorded as used at that save (manifests
 * before use was recorded: every entry). Entries without frames (packs written before the cache
 * was lazy, or by the system zstd, which cannot end frames) go with their whole pack. Pure.
 */
export function planLazy(m: Manifest, wanted: EntryRef[], lazy: Set<string>): LazyPlan {
  const plan: LazyPlan = { eager: [], prefetch: [], deferred: [] };
  const byPack = new Map<number, EntryRef[]>();
  for (const e of wanted) {
    if (!lazy.has(e.cache) || !e.frame) plan.eager.push(e);
    else byPack.set(e.pack, [...(byPack.get(e.pack) ?? []), e]);
  }
  const generation = m.generation;
  const used = (e: EntryRef) => generation === undefined || e.usedIn === undefined || e.usedIn === generation;
  for (const [index, refs] of byPack) {
    const usedBytes = refs.filter(used).reduce((s, e) => s + e.size, 0);
    const packBytes = m.packs[index]?.entryBytes ?? 0;
    if (packBytes > 0 && usedBytes / packBytes >= WHOLE_PACK_SHARE) {
      plan.eager.push(...refs);
      continue;
    }
    for (const e of refs) (used(e) ? plan.prefetch : plan.deferred).push(e as FramedRef);
  }
  return plan;
}
