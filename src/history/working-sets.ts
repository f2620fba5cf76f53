import type { CatalogItem } from "../cache/catalog.js";
import { type WorkingSet, workingSetOf } from "../cache/usage/working-set.js";
import { workloadOf } from "./stats.js";

/** How far back `kcache stats` looks for a working set's trend: this many saves of the prefix. */
const TREND_SAVES = 10;

/** One key's working set, as its manifest records it. */
export interface KeyWorkingSet extends WorkingSet {
  key: string;
  createdAt: string;
  /** Its save's number in the chain (null: saved before use was recorded). */
  generation: number | null;
}

/**
 * Per workload prefix, in one scope: the newest key's working set (what the job used at its save) and
 * the unused bytes every restore of it still carries, beside the same for the key `TREND_SAVES`
 * saves earlier (or the oldest kept), so a working set that grows, or dead bytes that pile up, show.
 */
export interface PrefixWorkingSet {
  prefix: string;
  newest: KeyWorkingSet;
  earlier: KeyWorkingSet | null;
  /** Saves between `earlier` and `newest` (by the chain's numbers, else by keys kept). */
  saves: number;
}

function keyWorkingSet(item: CatalogItem): KeyWorkingSet {
  const m = item.manifest as NonNullable<CatalogItem["manifest"]>;
  return { key: m.key, createdAt: m.createdAt, generation: m.generation ?? null, ...workingSetOf(m) };
}

export function workingSets(catalog: CatalogItem[], scope: string, prefix?: string): PrefixWorkingSet[] {
  const byPrefix = new Map<string, CatalogItem[]>();
  for (const i of catalog) {
    const m = i.manifest;
    if (!m || m.scope !== scope || (prefix && !m.prefix.startsWith(prefix))) continue;
    byPrefix.set(workloadOf(m.prefix), [...(byPrefix.get(workloadOf(m.prefix)) ?? []), i]);
  }
  const out: PrefixWorkingSet[] = [];
  for (const [p, items] of byPrefix) {
    const sorted = items.sort((a, b) =>
      (a.manifest?.createdAt as string) < (b.manifest?.createdAt as string) ? 1 : -1,
    );
    const newest = keyWorkingSet(sorted[0] as CatalogItem);
    const back = sorted[Math.min(TREND_SAVES, sorted.length - 1)];
    const earlier = back && back !== sorted[0] ? keyWorkingSet(back) : null;
    const saves =
      earlier === null
        ? 0
        : newest.generation !== null && earlier.generation !== null
          ? newest.generation - earlier.generation
          : sorted.indexOf(back as CatalogItem);
    out.push({ prefix: p, newest, earlier, saves });
  }
  return out.sort((a, b) => (a.prefix < b.prefix ? -1 : 1));
}
