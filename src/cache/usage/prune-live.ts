import { isTrustedScope } from "../../keys/scope.js";
import { entryId } from "../../manifest/entry-id.js";
import { decodePart, LIVE } from "../../store/layout.js";
import type { Store, StoredObject } from "../../store/store.js";
import type { CatalogItem } from "../catalog.js";

/** Live entries no key took are kept this long (a job that shared them, and its save, are long done). */
export const LIVE_MAX_AGE_MS = 24 * 3600 * 1000;

/**
 * The live objects (store.live) prune deletes: those of entries a kept key now holds (the key's packs
 * serve them), and those older than a day or `olderThanMs` (no key took them: a failed job's, a pull
 * request's). Never younger than `graceMs`: a job may be sharing them now.
 */
export async function liveToDelete(
  store: Store,
  kept: CatalogItem[],
  policy: { olderThanMs?: number; graceMs: number },
  now: number,
): Promise<StoredObject[]> {
  // A live object is spent once a key its readers restore holds its entry: a key of its own scope,
  // or one of the default branch's (every scope reads those). A pull request's key holding the same
  // entry does not spend the default branch's live object: its jobs never read that key.
  const held = new Set<string>();
  for (const i of kept)
    for (const e of i.manifest?.entries ?? [])
      held.add(isTrustedScope(i.scope) ? `*\0${entryId(e)}` : `${i.scope}\0${entryId(e)}`);
  const maxAge = Math.min(LIVE_MAX_AGE_MS, policy.olderThanMs ?? LIVE_MAX_AGE_MS);
  return (await store.list(`${LIVE}/`)).filter((o) => {
    const age = now - o.modified.getTime();
    if (age <= policy.graceMs) return false;
    const parts = o.name.split("/");
    const scope = decodePart(parts[1]);
    const cache = decodePart(parts[3]);
    const name = decodePart((parts[4] ?? "").replace(/\.(tar\.zst|json)$/, ""));
    // A name kcache did not encode is no live entry of any key: removed once old, as any.
    if (scope === null || cache === null || name === null) return age > maxAge;
    const id = entryId({ cache, name });
    return age > maxAge || held.has(`*\0${id}`) || held.has(`${scope}\0${id}`);
  });
}
