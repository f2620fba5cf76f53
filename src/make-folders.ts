import fs from "node:fs";
import path from "node:path";

/**
 * `fs.mkdirSync(dir, { recursive: true })`, bounded. Node's own (Node 20) loops for ever where a
 * folder's mkdir answers ENOENT though its parent exists, as under /proc and /sys: a state folder or
 * store named there spun a core instead of failing. Here each folder of the path is made at most
 * once, deepest existing one first; an error names the folder that could not be made. A folder
 * another process makes meanwhile is taken; a file where a folder should be is EEXIST, as Node's.
 */
export function makeFolders(dir: string): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    if (made(at)) break;
    if (path.dirname(at) === at) break;
    missing.push(at);
  }
  for (const at of missing.reverse()) if (!made(at)) fs.mkdirSync(at);
}

/**
 * Makes `at` if its parent exists: true where it is a folder now, false where its parent is missing
 * (ENOENT); any other failure, and a file in its place, thrown.
 */
function made(at: string): boolean {
  // Most calls find the folder there (a restore's entries share theirs): a look, no thrown error.
  if (fs.statSync(at, { throwIfNoEntry: false })?.isDirectory()) return true;
  try {
    fs.mkdirSync(at);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST" && fs.statSync(at, { throwIfNoEntry: false })?.isDirectory()) return true;
    if (code === "ENOENT") return false;
    throw e;
  }
}
