import fs from "node:fs";
import path from "node:path";
import { type CacheKind, KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { ensureRealDirs } from "../../pack/read/real-dirs.js";

/**
 * kcache 0.1's restores moved the entries a restored key lacked into `<cache>/.kcache-aside/`, and
 * the next one deleted them: on a persistent runner, its warm cache. Entries still there go back
 * where they were (they are local entries like any other: used, never uploaded unverified) unless
 * the folder has that entry again; then the aside folder is removed. Returns how many came back.
 */
const ASIDE_DIR = `${KCACHE_PRIVATE_PREFIX}aside`;

export async function bringBackAside(kind: CacheKind, root: string): Promise<number> {
  const aside = path.join(root, ASIDE_DIR);
  if (!fs.existsSync(aside)) return 0;
  let back = 0;
  for (const e of (await kind.scan(aside)).entries) {
    const dest = path.join(root, e.name);
    if (fs.existsSync(dest)) continue;
    try {
      const parent = path.posix.dirname(e.name);
      ensureRealDirs(root, parent === "." ? "" : parent);
      fs.renameSync(path.join(aside, e.name), dest);
      back++;
    } catch {
      // another restore took it back first, or it cannot move: the job compiles it if it needs it
    }
  }
  fs.rmSync(aside, { recursive: true, force: true });
  return back;
}
