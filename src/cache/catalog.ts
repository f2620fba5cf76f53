import { IntegrityError } from "../errors.js";
import { decodeManifest, type Manifest } from "../manifest/manifest.js";
import { MANIFESTS, parseManifestObject } from "../store/layout.js";
import type { Store, StoredObject } from "../store/store.js";

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
    const data = await store.read(o.name);
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

/** Compressed bytes of the packs a manifest references. */
export function manifestBytes(m: Manifest): number {
  return m.packs.reduce((s, p) => s + p.size, 0);
}
