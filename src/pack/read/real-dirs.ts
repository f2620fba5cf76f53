import fs from "node:fs";
import path from "node:path";

/**
 * Makes `rel` (a "/"-separated folder path inside `root`) exist as real folders, refusing to pass
 * through a symlink or a file already in the cache folder: `mkdir -p` would follow a link planted
 * there and write outside the cache.
 */
export function ensureRealDirs(root: string, rel: string): void {
  let at = root;
  for (const part of rel.split("/").filter(Boolean)) {
    at = path.join(at, part);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      try {
        fs.mkdirSync(at);
      } catch (m) {
        if ((m as NodeJS.ErrnoException).code !== "EEXIST") throw m;
      }
      st = fs.lstatSync(at);
    }
    if (st.isSymbolicLink())
      throw new Error(`${at} is a symlink in the cache folder; not writing through it`);
    if (!st.isDirectory()) throw new Error(`${at} is not a folder`);
  }
}
