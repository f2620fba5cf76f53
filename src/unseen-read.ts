import fs from "node:fs";

/**
 * kcache's own reads of cache entries (checking group files, hashing, packing, sharing with a job's
 * folder) must not look like the job's: access times are how a save and a trim learn what a job
 * read (cache/usage/usage.ts). So entries are opened with O_NOATIME, which Linux allows the file's owner
 * (and root); elsewhere, or for another user's file, a plain open. Nothing else changes.
 */
const NOATIME = fs.constants.O_NOATIME ?? 0;

/** Opens a file for reading without moving its access time where the system allows that. */
export function openUnseen(p: string): number {
  if (NOATIME) {
    try {
      return fs.openSync(p, fs.constants.O_RDONLY | NOATIME);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EPERM") throw e;
    }
  }
  return fs.openSync(p, "r");
}

/** A whole file, read without moving its access time where the system allows that. */
export function readUnseen(p: string): Buffer {
  const fd = openUnseen(p);
  try {
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Copies `src` to a new file `dest` (which must not exist), reading `src` unseen. */
export function copyUnseen(src: string, dest: string): void {
  fs.writeFileSync(dest, readUnseen(src), { flag: "wx", mode: fs.statSync(src).mode & 0o777 });
}
