import { Header, Pax } from "tar";

const FIXED_MTIME = new Date(0);

/**
 * The tar header block(s) for one regular file. Metadata is fixed (mode 0644, owner 0, mtime 0) so a
 * pack depends only on entry contents; names too long for ustar get a PAX extended header.
 */
export function fileHeader(tarPath: string, size: number): Buffer {
  const fields = {
    path: tarPath,
    mode: 0o644,
    size,
    mtime: FIXED_MTIME,
    type: "File" as const,
    uid: 0,
    gid: 0,
  };
  const header = new Header(fields);
  const needPax = header.encode();
  const block = header.block as Buffer;
  return needPax ? Buffer.concat([new Pax(fields).encode(), block]) : block;
}

/** Zero padding that ends a file's data on a 512-byte boundary. */
export function padding(size: number): Buffer {
  const rem = size % 512;
  return rem === 0 ? EMPTY : Buffer.alloc(512 - rem);
}

const EMPTY = Buffer.alloc(0);

/** The two zero blocks that end an archive. */
export const END_OF_ARCHIVE = Buffer.alloc(1024);
