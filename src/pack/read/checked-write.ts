import fs from "node:fs";
import { stampOpenFile } from "./unread-stamp.js";

/**
 * Writes that check every count. On a full disk Node's `write`/`writev` can return fewer bytes than
 * asked instead of throwing; a file cut short must never be taken for a whole one.
 */

/** An ENOSPC-like error for a write that made no progress. */
function noProgress(file: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`${file}: write made no progress (disk full?)`);
  e.code = "ENOSPC";
  return e;
}

/** Writes every byte of `data` to `fd` synchronously, continuing after short writes. */
export function writeFullySync(fd: number, data: Buffer, file: string): void {
  let off = 0;
  while (off < data.length) {
    const n = fs.writeSync(fd, data, off, data.length - off);
    if (n <= 0) throw noProgress(file);
    off += n;
  }
}

/** Creates `file` (it must not exist) holding every byte of `data`; `unread`: stamped as not read since. */
export function writeNewFileSync(file: string, data: Buffer, unread = false): void {
  const fd = fs.openSync(file, "wx");
  try {
    writeFullySync(fd, data, file);
    if (unread) stampOpenFile(fd);
  } finally {
    fs.closeSync(fd);
  }
}
