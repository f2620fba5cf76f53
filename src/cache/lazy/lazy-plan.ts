import { formatBytes } from "../../format.js";
import type { EntryRef, Manifest } from "../../manifest/manifest.js";

/** An entry of a manifest that lies in frames of its own in its pack. */
export type FramedRef = EntryRef & { frame: [number, number] };

/**
 * Why a lazy restore reads a pack whole, as an eager one does: `no-frames`, its entries have no frames
 * of their own to be read alone (written before the cache was lazy, or by an engine that cannot end
 * frames); `mostly-used`, entries recent jobs used hold most of its bytes, so one read is cheaper.
 */
export const WHOLE_REASONS = ["no-frames", "mostly-used"] as const;
export type WholeReason = (typeof WHOLE_REASONS)[number];

/** Packs a lazy restore read whole for one reason: how many, and the entries and bytes it wanted of them. */
export interface WholeTally {
  packs: number;
  entries: number;
  bytes: number;
}

/** A lazy restore's packs read whole, by reason (the restore report's and the run record's `readWhole`). */
export type ReadWhole = Partial<Record<WholeReason, WholeTally>>;

/** How a lazy restore takes a key's entries (those not already in place). */
export interface LazyPlan {
  /** Read with their whole pack, as an eager restore does. */
  eager: EntryRef[];
  /** Placed before the job by ranged reads of their frames: the entries recent jobs used. */
  prefetch: FramedRef[];
  /** Left in the store, each fetched alone when the job looks it up. */
  deferred: FramedRef[];
  /** Of the eager entries, those of lazy caches, by why their pack is read whole. */
  readWhole: ReadWhole;
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
  const plan: LazyPlan = { eager: [], prefetch: [], deferred: [], readWhole: {} };
  const byPack = new Map<number, EntryRef[]>();
  const unframed = new Map<number, EntryRef[]>();
  for (const e of wanted) {
    const into = !lazy.has(e.cache) ? null : e.frame ? byPack : unframed;
    if (into) into.set(e.pack, [...(into.get(e.pack) ?? []), e]);
    else plan.eager.push(e);
  }
  for (const refs of unframed.values()) readWhole(plan, "no-frames", refs);
  const generation = m.generation;
  const used = (e: EntryRef) => generation === undefined || e.usedIn === undefined || e.usedIn === generation;
  for (const [index, refs] of byPack) {
    const usedBytes = refs.filter(used).reduce((s, e) => s + e.size, 0);
    const packBytes = m.packs[index]?.entryBytes ?? 0;
    if (packBytes > 0 && usedBytes / packBytes >= WHOLE_PACK_SHARE) {
      readWhole(plan, "mostly-used", refs);
      continue;
    }
    for (const e of refs) (used(e) ? plan.prefetch : plan.deferred).push(e as FramedRef);
  }
  return plan;
}

/** Puts one pack's wanted entries with the eager ones and counts them under `reason`. */
function readWhole(plan: LazyPlan, reason: WholeReason, refs: EntryRef[]): void {
  plan.eager.push(...refs);
  addWhole(plan.readWhole, reason, {
    packs: 1,
    entries: refs.length,
    bytes: refs.reduce((s, e) => s + e.size, 0),
  });
}

/** Adds `t` to `into`'s tally for `reason`. */
export function addWhole(into: ReadWhole, reason: WholeReason, t: WholeTally): void {
  const was = into[reason] ?? { packs: 0, entries: 0, bytes: 0 };
  into[reason] = { packs: was.packs + t.packs, entries: was.entries + t.entries, bytes: was.bytes + t.bytes };
}

/** Every tally of `from` added into `into` (sums across keys, runs and weeks). */
export function sumWhole(into: ReadWhole, from: ReadWhole | undefined): ReadWhole {
  for (const [reason, t] of Object.entries(from ?? {})) addWhole(into, reason as WholeReason, t);
  return into;
}

const WHY: Record<WholeReason, string> = {
  "no-frames":
    "written before the cache was lazy (or by an engine that cannot end frames), they have no frames to read an entry alone; the next save with restore: lazy packs these entries again in frames",
  "mostly-used": `entries recent jobs used hold ${WHOLE_PACK_SHARE * 100}% of their bytes or more, so reading each whole is cheaper than ranged reads of most of it`,
};

/** The line a lazy restore says for each reason it read packs whole. */
export function wholeLines(r: ReadWhole): string[] {
  return Object.entries(r).map(
    ([reason, t]) =>
      `restore: lazy: ${t.packs} pack(s) read whole (${t.entries} entries, ${formatBytes(t.bytes)}) before the job: ${WHY[reason as WholeReason]}`,
  );
}

/** The packs read whole, by reason, in a few words each ("2 packs without frames (4.46 MB)"), or null when none were. */
export function wholeWords(r: ReadWhole | undefined): string | null {
  const parts = Object.entries(r ?? {}).map(
    ([reason, t]) =>
      `${t.packs} ${t.packs === 1 ? "pack" : "packs"} ${reason === "no-frames" ? "without frames" : "mostly used"} (${formatBytes(t.bytes)})`,
  );
  return parts.length ? parts.join(", ") : null;
}
