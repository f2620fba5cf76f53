import fs from "node:fs";
import path from "node:path";
import { type CacheKind, KCACHE_PRIVATE_PREFIX, type ScanResult } from "../kinds/kind.js";
import { ensureRealDirs } from "../pack/read/real-dirs.js";

/** Where entries a restore did not bring are moved: private to kcache, invisible to Triton and saves. */
export const ASIDE_DIR = `${KCACHE_PRIVATE_PREFIX}aside`;

/**
 * Makes a cache folder hold only what the restored key holds. A runner that keeps its folder between
 * jobs may hold entries a pull request's job compiled; left there, the default branch's next save
 * would upload them. They are moved aside (kept until the next restore, for inspection), never
 * deleted in place and never saved. `scanned`: the folder's scan, when the caller has one. Returns how
 * many entries were moved.
 */
export async function moveAsideUnlisted(
  kind: CacheKind,
  root: string,
  keep: Set<string>,
  scanned?: ScanResult,
): Promise<number> {
  const aside = path.join(root, ASIDE_DIR);
  fs.rmSync(aside, { recursive: true, force: true });
  const scan = scanned ?? (await kind.scan(root));
  let moved = 0;
  for (const e of scan.entries) {
    if (keep.has(e.name)) continue;
    const parent = path.posix.dirname(e.name);
    ensureRealDirs(root, parent === "." ? ASIDE_DIR : `${ASIDE_DIR}/${parent}`);
    try {
      fs.renameSync(path.join(root, e.name), path.join(aside, e.name));
      moved++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
  return moved;
}

/** Removes the folder of entries moved aside by the last restore. */
export function clearAside(root: string): void {
  fs.rmSync(path.join(root, ASIDE_DIR), { recursive: true, force: true });
}
