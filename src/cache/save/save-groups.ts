import { type Present, presentId } from "./save-scan.js";

/** What a save knows of its lazily restored caches (restore: lazy) when it plans its packs. */
export interface LazySave {
  /** Caches restored lazily: their packs hold each entry in zstd frames of its own. */
  caches: Set<string>;
  /**
   * This save's Zstandard engine can end frames (zstd-napi, the WebAssembly one). Where it cannot,
   * packs come out as one stream: packing entries again for frames would only write them unframed again.
   */
  canFrame: boolean;
  /** Entries the job used ("cache/name"): the next lazy restore fetches these ahead and leaves the rest. */
  usedNow: Set<string>;
}

/** Packs of at least this many bytes are worth a thread of their own. */
const MIN_PACK_BYTES = 8 * 1024 * 1024;
/** A save splits into about this many packs, when big enough, so threads can share the work. */
const PACKS_FOR_THREADS = 8;

/**
 * The packs a save writes, each a list of entries in a stable order. A lazy cache's entries the job
 * used are packed apart from those it did not: the next lazy restore then reads the used ones in
 * whole packs (or runs of frames) and leaves the others in the store, rather than reading a pack
 * whole because most of it is used and placing the rest with it. Other caches' entries are packed as
 * they always were.
 */
export function packGroups(items: Present[], packBytes: number, lazy: LazySave): Present[][] {
  const eager: Present[] = [];
  const used: Present[] = [];
  const unused: Present[] = [];
  for (const p of items)
    (!lazy.caches.has(p.cache) ? eager : lazy.usedNow.has(presentId(p)) ? used : unused).push(p);
  return [eager, used, unused]
    .filter((c) => c.length > 0)
    .flatMap((c) => splitBySize(c, packTarget(c, packBytes), packBytes));
}

/**
 * The uncompressed size to split new entries by: save.pack-mib at most, but small enough that a large
 * save makes about eight packs of 8 MiB or more, which restores and later saves spread over threads.
 * It depends only on the bytes saved, never on this machine, so every runner splits alike.
 */
function packTarget(items: Present[], packBytes: number): number {
  const total = items.reduce((n, p) => n + p.size, 0);
  return Math.min(packBytes, Math.max(MIN_PACK_BYTES, Math.ceil(total / PACKS_FOR_THREADS)));
}

/**
 * Groups entries into packs of about equal size, at least `target` uncompressed bytes each where there
 * are that many, and at most `packBytes`, in a stable order. Equal, not filled one by one: a filled
 * split left a small last pack, which a consolidation then packed again (its bytes stored once more)
 * because a small pack lengthens the chain a restore reads.
 */
function splitBySize(items: Present[], target: number, packBytes: number): Present[][] {
  const sorted = [...items].sort((a, b) => (presentId(a) < presentId(b) ? -1 : 1));
  const total = sorted.reduce((n, p) => n + p.size, 0);
  if (total === 0) return sorted.length ? [sorted] : [];
  let count = Math.max(1, Math.floor(total / target));
  if (total / count > packBytes) count = Math.ceil(total / packBytes);
  const each = total / count;
  const groups: Present[][] = Array.from({ length: count }, () => []);
  let at = 0;
  for (const p of sorted) {
    // Each entry goes to the pack its middle byte falls in: packs come out within an entry of equal.
    (groups[Math.min(count - 1, Math.floor((at + p.size / 2) / each))] as Present[]).push(p);
    at += p.size;
  }
  return groups.filter((g) => g.length > 0);
}
