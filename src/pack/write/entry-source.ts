import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { type CacheKind, entryFilePath, type FoundEntry } from "../../kinds/kind.js";
import { RelocationError } from "../../kinds/pickle-rewriter.js";
import { openUnseen, readUnseen } from "../../unseen-read.js";
import type { StoredFiles } from "./stored-forms.js";

/** One file of an entry in stored form, opened and sized, ready to be hashed or packed. */
export interface OpenedFile {
  rel: string;
  size: number;
  /** Stored bytes of a relocatable file (read whole and normalised for its location). */
  data: Buffer | null;
  /** Open descriptor of any other file, read in pieces (`chunks`, or the pack builder's own loop). */
  fd: number | null;
}

/**
 * Opens an entry's files in pack order, in stored form. Everything is opened before any byte is
 * used, so an entry whose file vanished since the scan is reported (null) rather than half packed.
 * An entry that names its folder and cannot be stored without it throws RelocationError. `stored`:
 * its files' stored forms already written (stored-forms.ts).
 */
export function openEntry(
  kind: CacheKind,
  root: string,
  entry: FoundEntry,
  stored?: StoredFiles,
): OpenedFile[] | null {
  const opened: OpenedFile[] = [];
  try {
    for (const f of kind.packOrder(entry.files)) {
      const p = entryFilePath(root, entry, f.rel);
      const written = stored?.[f.rel];
      if (written) {
        // Its stored form, written ahead with the save's other pickles (stored-forms.ts).
        opened.push({ rel: f.rel, size: written[1], data: null, fd: fs.openSync(written[0], "r") });
        continue;
      }
      if (kind.isRelocatable(entry.name, f.rel)) {
        const raw = readUnseen(p);
        // Only a file a child process rewrites is written out (a temporary folder each, ~0.5 ms to
        // make and remove: for every generated module of a torch.compile cache, most of its save).
        const outOfProcess = kind.normalizeInto && kind.normalization?.(root, entry.name, f.rel, raw);
        const file = outOfProcess ? normalizedFile(kind, root, entry, f.rel, raw) : null;
        if (file) opened.push(file);
        else {
          const data = kind.normalize(root, entry.name, f.rel, raw);
          opened.push({ rel: f.rel, size: data.length, data, fd: null });
        }
        continue;
      }
      const fd = openUnseen(p);
      opened.push({ rel: f.rel, size: fs.fstatSync(fd).size, data: null, fd });
    }
    return opened;
  } catch (e) {
    closeEntry(opened);
    if (e instanceof RelocationError) throw e;
    return null;
  }
}

/**
 * A file's stored form written by the kind to a temporary file, opened and unlinked at once (read
 * through its descriptor like any other file; gone when closed): null where it is stored as it is.
 */
function normalizedFile(
  kind: CacheKind,
  root: string,
  entry: FoundEntry,
  rel: string,
  raw: Buffer,
): OpenedFile | null {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-stored-"));
  try {
    const out = path.join(dir, "stored");
    const size = kind.normalizeInto?.(root, entry.name, rel, raw, out) ?? null;
    return size === null ? null : { rel, size, data: null, fd: fs.openSync(out, "r") };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The stored bytes of one opened file, read through `buf`: each piece is a view of `buf`, to be used
 * before the next is asked for. Closes a read file's descriptor at its end.
 */
export function* chunks(file: OpenedFile, buf: Buffer): Generator<Buffer> {
  if (file.data) {
    yield file.data;
    return;
  }
  const fd = file.fd as number;
  try {
    let pos = 0;
    while (pos < file.size) {
      const n = fs.readSync(fd, buf, 0, Math.min(buf.length, file.size - pos), pos);
      if (n === 0) throw new Error(`file shrank while being read (${file.rel})`);
      pos += n;
      yield buf.subarray(0, n);
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
