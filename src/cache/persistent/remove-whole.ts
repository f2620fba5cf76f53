import fs from "node:fs";
import path from "node:path";
import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { type OwnerRule, ownedName } from "../../pack/read/staging-owner.js";

/** What a deletion renamed away and has not finished removing: garbage once its process is gone. */
export const TRASH: OwnerRule = { prefix: `${KCACHE_PRIVATE_PREFIX}trash-`, foreignMs: 3600_000 };

/**
 * Deletes `p`, an entry or a job folder inside the cache folder `root`, so that nobody ever sees
 * part of it: renamed first to a private name at the top of `root` (gone at once for Triton and for
 * kcache's scans, which skip such names there), then removed. A kcache killed in between leaves the
 * private name, which the next restore removes.
 */
export function removeWhole(root: string, p: string): void {
  const gone = path.join(root, ownedName(TRASH.prefix));
  try {
    fs.renameSync(p, gone);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
    throw e;
  }
  fs.rmSync(gone, { recursive: true, force: true });
}
