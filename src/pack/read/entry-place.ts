import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { ensureRealDirs } from "./real-dirs.js";

/**
 * Moves a verified entry into place. A file replaces atomically; a folder that already exists is
 * moved aside first, then removed, so the cache never holds a mix of old and new files. Another
 * restore into the same folder may place the same entry at the same moment: when what is there is
 * byte for byte what this one staged, that is the entry in place, and this copy is dropped; with
 * `keepExisting`, whatever is there stays (rename onto an empty folder, as Triton's cache manager
 * leaves one when it looks up an absent entry, still places).
 * (A job's entries merged into a persistent folder are placed the same way.)
 */
export function place(
  staged: string,
  root: string,
  entryName: string,
  staging: string,
  keepExisting = false,
): void {
  ensureRealDirs(root, path.posix.dirname(entryName) === "." ? "" : path.posix.dirname(entryName));
  const dest = path.join(root, entryName);
  for (let attempt = 0; ; attempt++) {
    try {
      fs.renameSync(staged, dest);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "EISDIR" && code !== "ENOTDIR") throw e;
    }
    // An entry placed while the job runs never replaces one: what is there the job wrote itself.
    if (keepExisting || sameTree(staged, dest)) {
      fs.rmSync(staged, { recursive: true, force: true });
      return;
    }
    if (attempt === 3) throw new Error(`${dest} keeps changing under another writer`);
    const aside = path.join(staging, `old-${randomBytes(6).toString("hex")}`);
    try {
      fs.renameSync(dest, aside);
    } catch (e) {
      // Moved away by another restore in between: try the rename again.
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      continue;
    }
    fs.rmSync(aside, { recursive: true, force: true });
  }
}

/** Whether two entries (a file, or a folder of files) hold the same names and bytes. */
function sameTree(a: string, b: string): boolean {
  try {
    const sa = fs.statSync(a);
    const sb = fs.statSync(b);
    if (sa.isDirectory() !== sb.isDirectory()) return false;
    if (!sa.isDirectory()) return sa.size === sb.size && fs.readFileSync(a).equals(fs.readFileSync(b));
    const na = fs.readdirSync(a).sort();
    const nb = fs.readdirSync(b).sort();
    return na.join("\0") === nb.join("\0") && na.every((n) => sameTree(path.join(a, n), path.join(b, n)));
  } catch {
    return false;
  }
}
