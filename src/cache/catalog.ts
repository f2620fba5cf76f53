import { IntegrityError } from "../errors.js";
import { decodeManifest, type Manifest } from "../manifest/manifest.js";
import { MANIFESTS, PACKS, parseManifestObject } from "../store/layout.js";
import { ObjectFault, type Store, type StoredObject } from "../store/store.js";

/** The most a manifest may hold (a key of a million entries is well within it): what a reader allocates. */
export const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

/** One manifest as listed: where it is, when it was written, and what it references. */
export interface CatalogItem {
  object: string;
  scope: string;
  key: string;
  modified: Date;
  manifest: Manifest | null;
  /** Why the manifest could not be read, when it could not. */
  damaged: string | null;
}

/** Reads every manifest in the store, newest first; damaged ones are listed with the reason. */
export async function readCatalog(store: Store): Promise<CatalogItem[]> {
  return readItems(store, await store.list(`${MANIFESTS}/`));
}

/** Reads the named manifests (as `readCatalog` does for all). */
export async function readCatalogItems(store: Store, names: string[]): Promise<CatalogItem[]> {
  return readItems(
    store,
    names.map((name) => ({ name, size: 0, modified: new Date() })),
  );
}

async function readItems(store: Store, objects: StoredObject[]): Promise<CatalogItem[]> {
  const items: CatalogItem[] = [];
  for (const o of objects) {
    const where = parseManifestObject(o.name);
    if (!where) continue;
    let data: Buffer | null;
    try {
      data = await store.read(o.name, MAX_MANIFEST_BYTES);
    } catch (e) {
      // Refused for what it is (too large, not a file): damaged, as one that does not verify.
      if (!(e instanceof ObjectFault)) throw e;
      items.push({ object: o.name, ...where, modified: o.modified, manifest: null, damaged: e.message });
      continue;
    }
    if (!data) continue;
    try {
      items.push({
        object: o.name,
        ...where,
        modified: o.modified,
        manifest: decodeManifest(data, o.name),
        damaged: null,
      });
    } catch (e) {
      if (!(e instanceof IntegrityError)) throw e;
      items.push({ object: o.name, ...where, modified: o.modified, manifest: null, damaged: e.message });
    }
  }
  return items;
}

/**
 * Compressed bytes of the packs a manifest references: as the store lists them where `stored` is given
 * (a pack it does not hold counts nothing), else as the manifest claims. A manifest is written by
 * whoever can write its scope, so a figure a user acts on (ls, stats, prune's budget) takes the store's.
 */
export function manifestBytes(m: Manifest, stored?: Map<string, number>): number {
  return m.packs.reduce((s, p) => s + packBytes(p, stored), 0);
}

/** One pack's bytes: as the store lists it where `stored` is given (nothing if it holds none), else as claimed. */
export function packBytes(pack: { object: string; size: number }, stored?: Map<string, number>): number {
  return stored ? (stored.get(pack.object) ?? 0) : pack.size;
}

/** Every pack's size as the store lists it, or undefined where it cannot list them all (GitHub's cache). */
export async function storedPackSizes(store: Store): Promise<Map<string, number> | undefined> {
  if (!store.capabilities.listAll) return undefined;
  return new Map((await store.list(`${PACKS}/`)).map((o) => [o.name, o.size]));
}
