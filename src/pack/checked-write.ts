import fs from "node:fs";

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

/** Writes every byte of `chunks` through `fh`, continuing after short writes. */
export async function writevFully(fh: fs.promises.FileHandle, chunks: Buffer[], file: string): Promise<void> {
  let pending = chunks.filter((c) => c.length > 0);
  while (pending.length) {
    const { bytesWritten } = await fh.writev(pending);
    if (bytesWritten <= 0) throw noProgress(file);
    pending = advance(pending, bytesWritten);
  }
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

/** Creates `file` (it must not exist) holding exactly `chunks`. */
export async function createFileFully(file: string, chunks: Buffer[]): Promise<void> {
  const fh = await fs.promises.open(file, "wx");
  try {
    await writevFully(fh, chunks, file);
  } finally {
    await fh.close();
  }
}

/** The chunks left after the first `n` bytes were written. */
function advance(chunks: Buffer[], n: number): Buffer[] {
  let skip = n;
  let i = 0;
  while (i < chunks.length && skip >= (chunks[i] as Buffer).length) {
    skip -= (chunks[i] as Buffer).length;
    i++;
  }
  const rest = chunks.slice(i);
  if (rest.length && skip > 0) rest[0] = (rest[0] as Buffer).subarray(skip);
  return rest;
}
