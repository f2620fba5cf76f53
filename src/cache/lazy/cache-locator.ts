import fs from "node:fs";
import path from "node:path";
import { tritonKind } from "../../kinds/triton.js";

/** A cache whose entries are looked up: its name and folder. */
export interface LookedUpCache {
  name: string;
  root: string;
}

/**
 * Which of the job's caches an entry folder named by the job's processes lies in. Triton names the
 * folder as its cache path says, which may be a symlink to the folder kcache restored into (or the
 * other way round): a folder is matched by its path and by its real path.
 */
export class CacheLocator {
  private readonly roots: (LookedUpCache & { real: string })[];

  constructor(caches: LookedUpCache[]) {
    this.roots = caches.map((c) => ({ ...c, real: realOr(path.resolve(c.root)) }));
  }

  /** The cache holding the entry folder `folder`, and the entry's name; null for any other folder. */
  locate(folder: string): { cache: LookedUpCache; name: string } | null {
    const abs = path.resolve(folder);
    const parent = path.dirname(abs);
    const name = path.basename(abs);
    if (!tritonKind.isEntryName(name)) return null;
    const c =
      this.roots.find((r) => path.resolve(r.root) === parent || r.real === parent) ??
      this.roots.find((r) => r.real === realOr(parent));
    return c ? { cache: { name: c.name, root: c.root }, name } : null;
  }
}

function realOr(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}
