import fs from "node:fs";
import path from "node:path";
import type { CacheKind, FoundEntry } from "../kinds/kind.js";

/** Files larger than this are streamed in chunks rather than read whole. */
const WHOLE_FILE_LIMIT = 16 * 1024 * 1024;
const CHUNK = 4 * 1024 * 1024;

/** One file of an entry in stored form, opened and sized, ready to be hashed or packed. */
export interface OpenedFile {
  rel: string;
  size: number;
  /** Stored bytes, when read whole (small or relocatable files). */
  data: Buffer | null;
  /** Open descriptor for large files, read by `chunks`. */
  fd: number | null;
}

/**
 * Opens an entry's files in pack order, in stored form. Everything is opened before any byte is
 * used, so an entry whose file vanished since the scan is reported (null) rather than half packed.
 */
export function openEntry(kind: CacheKind, root: string, entry: FoundEntry): OpenedFile[] | null {
  const opened: OpenedFile[] = [];
  try {
    for (const f of kind.packOrder(entry.files)) {
      const p = f.rel ? path.join(root, entry.name, f.rel) : path.join(root, entry.name);
      const fd = fs.openSync(p, "r");
      const size = fs.fstatSync(fd).size;
      if (size <= WHOLE_FILE_LIMIT || kind.isRelocatable(f.rel)) {
        let data: Buffer = Buffer.allocUnsafe(size);
        const n = readFully(fd, data, 0, size);
        fs.closeSync(fd);
        data = n === size ? data : data.subarray(0, n);
        if (kind.isRelocatable(f.rel)) data = kind.normalize(root, entry.name, f.rel, data);
        opened.push({ rel: f.rel, size: data.length, data, fd: null });
      } else {
        opened.push({ rel: f.rel, size, data: null, fd });
      }
    }
    return opened;
  } catch {
    closeEntry(opened);
    return null;
  }
}

/** The stored bytes of one opened file, in chunks; closes a streamed file's descriptor at the end. */
export function* chunks(file: OpenedFile): Generator<Buffer> {
  if (file.data) {
    yield file.data;
    return;
  }
  const fd = file.fd as number;
  try {
    let pos = 0;
    while (pos < file.size) {
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, file.size - pos));
      const n = readFully(fd, buf, pos, buf.length);
      if (n !== buf.length) throw new Error(`file shrank while being read (${file.rel})`);
      pos += n;
      yield buf;
    }
  } finally {
    fs.closeSync(fd);
    file.fd = null;
  }
}

/** Closes whatever descriptors an abandoned entry still holds. */
export function closeEntry(files: OpenedFile[]): void {
  for (const f of files) {
    if (f.fd !== null) fs.closeSync(f.fd);
    f.fd = null;
  }
}

function readFully(fd: number, buf: Buffer, position: number, length: number): number {
  let done = 0;
  while (done < length) {
    const n = fs.readSync(fd, buf, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}
