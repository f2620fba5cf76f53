import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";

/**
 * When each entry of a persistent folder was last used, as the jobs learnt it (the hook, access
 * times, the restored key's record of use), kept in the folder itself: `.kcache-use.json`, entry
 * name -> milliseconds. Trim orders entries by it, with access and modification times beside it
 * (trim.ts), so it only ever adds knowledge: a lost or damaged record makes entries look older
 * than they are, never younger. Written under the folder lock, by temp file and rename.
 */
const USE_FILE = `${KCACHE_PRIVATE_PREFIX}use.json`;

export function readUse(root: string): Map<string, number> {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(root, USE_FILE), "utf8")) as { used?: unknown };
    const out = new Map<string, number>();
    if (v.used && typeof v.used === "object")
      for (const [name, ms] of Object.entries(v.used as Record<string, unknown>))
        if (typeof ms === "number" && Number.isFinite(ms)) out.set(name, ms);
    return out;
  } catch {
    return new Map();
  }
}

/**
 * Records uses (the later of the known and the given time wins) and forgets entries not in `keep`
 * when given (those no longer in the folder). Call it under the folder lock.
 */
export function recordUse(root: string, uses: Map<string, number>, keep?: Set<string>): void {
  const used = readUse(root);
  for (const [name, ms] of uses) used.set(name, Math.max(ms, used.get(name) ?? 0));
  if (keep) for (const name of used.keys()) if (!keep.has(name)) used.delete(name);
  const file = path.join(root, USE_FILE);
  const tmp = `${file}.${randomBytes(6).toString("hex")}`;
  fs.writeFileSync(tmp, JSON.stringify({ version: 1, used: Object.fromEntries(used) }));
  fs.renameSync(tmp, file);
}

/** Whether an earlier job ended in this folder (its record of use is there): a folder kept between jobs. */
export function keptBetweenJobs(root: string): boolean {
  return fs.existsSync(path.join(root, USE_FILE));
}
