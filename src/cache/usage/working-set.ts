import type { EntryRef, Manifest, Use } from "../../manifest/manifest.js";

/**
 * A key's working set as its manifest records it: the entries a job used at the save that wrote it
 * ("live"), and those it carried although unused there, with how many saves ago each was last used.
 * Manifests written before use was recorded count every entry as live.
 */
export interface WorkingSet {
  live: Tally;
  unused: Tally;
}

/** A count of entries and their uncompressed bytes. */
export interface Tally {
  entries: number;
  bytes: number;
}

/** The save an entry was last used at, from the manifest's own table. */
export function lastUseOf(m: Manifest, e: EntryRef): Use {
  const own: Use = { generation: m.generation ?? 0, revision: m.revision, at: m.createdAt };
  if (e.usedIn === undefined) return own;
  return m.uses?.find((u) => u.generation === e.usedIn) ?? own;
}

/** The working set of `m`'s entries (of the caches `only` names, when given). */
export function workingSetOf(m: Manifest, only?: Set<string>): WorkingSet {
  const out: WorkingSet = { live: { entries: 0, bytes: 0 }, unused: { entries: 0, bytes: 0 } };
  const generation = m.generation ?? 0;
  for (const e of m.entries) {
    if (only && !only.has(e.cache)) continue;
    const t = e.usedIn === undefined || e.usedIn === generation ? out.live : out.unused;
    t.entries++;
    t.bytes += e.size;
  }
  return out;
}
