import type { Manifest } from "../manifest/manifest.js";
import type { Store } from "../store/store.js";
import type { JobContext } from "./job-context.js";
import { gonePacks } from "./pack-lease.js";
import { storedManifest } from "./save/save-manifest.js";

/**
 * Whether a saved key can still be restored whole. GitHub's cache evicts entries on its own (least
 * recently used over 10 GB, or 7 days idle), and a key's manifest and packs are separate entries: a
 * manifest can outlive a pack. Such a key is broken, not present: restore passes it over, prewarm
 * fills it again and a save of the same key replaces its manifest (keys stay immutable while whole).
 */
export type KeyWholeness =
  | { state: "absent" }
  | { state: "whole"; manifest: Manifest }
  | { state: "broken"; manifest: Manifest; gone: string[] };

/**
 * The key stored at `object`. A manifest there that does not verify (damaged, or a store answering
 * garbage) is a data fault, never taken for "the key exists".
 */
export async function keyWholeness(store: Store, object: string): Promise<KeyWholeness> {
  const manifest = await storedManifest(store, object);
  if (!manifest) return { state: "absent" };
  const gone = await gonePacks(store, manifest);
  return gone.length ? { state: "broken", manifest, gone } : { state: "whole", manifest };
}

/** "3 of its 10 packs are gone from the store (packs/...)": for messages. */
export function goneSummary(w: { manifest: Manifest; gone: string[] }): string {
  return `${w.gone.length} of its ${w.manifest.packs.length} packs are gone from the store (${w.gone[0]})`;
}

/**
 * Makes way for a save of a broken key: its manifest deleted, said once. False where the store cannot
 * delete (GitHub's cache without a token that may): the key stays as it is.
 */
export async function clearBrokenKey(
  ctx: JobContext,
  object: string,
  broken: { manifest: Manifest; gone: string[] },
): Promise<boolean> {
  if (!ctx.store.capabilities.delete) return false;
  ctx.log.info(`key ${ctx.key}: ${goneSummary(broken)}; saving the key again`);
  await ctx.store.delete(object);
  return true;
}

/**
 * Whether a save may write its key: `stop` says why not (it exists whole: keys are immutable); a
 * broken key is cleared first (`replacing`), where the store can delete its manifest.
 */
export async function keyToSave(
  ctx: JobContext,
  object: string,
  scope: string,
  restoredExactly: boolean,
): Promise<{ stop: string | null; replacing: boolean }> {
  const existing = await keyWholeness(ctx.store, object);
  if (existing.state === "whole")
    return {
      stop: restoredExactly ? "was restored exactly" : `already exists in scope ${scope}`,
      replacing: false,
    };
  if (existing.state === "absent") return { stop: null, replacing: false };
  if (!(await clearBrokenKey(ctx, object, existing)))
    return {
      stop: `is in scope ${scope} but ${goneSummary(existing)}, and this store cannot replace its manifest (on GitHub's cache: a token with actions: write)`,
      replacing: false,
    };
  return { stop: null, replacing: true };
}

/**
 * The parent a job's local state names, unless it is this very key in this scope: a save asks only
 * once keyToSave found that key absent or broken (pruned, evicted, the store wiped since), so it is no
 * parent, and a save that took it for one said "already exists" and never saved the key again.
 */
export function unlessThisKey<P extends { key: string; scope: string }>(
  parent: P | null | undefined,
  key: string,
  scope: string,
): P | null {
  return parent && !(parent.key === key && parent.scope === scope) ? parent : null;
}
