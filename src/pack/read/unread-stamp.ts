import fs from "node:fs";

/**
 * The mark of a file no one has read since a restore wrote it: an access time one second before its
 * modification time. Linux's default `relatime` (and `strictatime`, and `lazytime`) moves the atime
 * to the time of the next read whenever it is not newer than the mtime, so a file that still carries
 * the mark was not read (cache/usage/usage.ts learns a job's use from it). The pack reader marks each
 * file it writes as it closes it, on its own thread; the restore marks whatever else its folders
 * hold afterwards.
 */

/** How far before its mtime a file's atime is set. */
export const STAMP_MS = 1000;
/** A stamped atime read back within this of the stamp is still the stamp (timestamps round). */
const STAMP_TOLERANCE_MS = 250;

/** Whether times read back from a file are the mark (the file was not read since it was stamped). */
export function isStamped(atimeMs: number, mtimeMs: number): boolean {
  return Math.abs(atimeMs - (mtimeMs - STAMP_MS)) <= STAMP_TOLERANCE_MS;
}

/**
 * Marks the open file `fd` as unread, its mtime now. Where times cannot be set the file stays as it
 * was: the restore finds it unstamped and stamps it, or learns that reads move no times there.
 */
export function stampOpenFile(fd: number): void {
  const now = Date.now();
  try {
    fs.futimesSync(fd, (now - STAMP_MS) / 1000, now / 1000);
  } catch {
    // Only a saving of time.
  }
}
