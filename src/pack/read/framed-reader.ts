import { isObjectFault, type Store } from "../../store/store.js";
import type { PackReadResult, RestoreTarget, WantedEntry } from "../pack-request.js";
import { readPack, unreadPack } from "./pack-reader.js";

/** An entry a manifest places in zstd frames of its own: [offset, bytes] in its pack. */
export interface FramedEntry extends WantedEntry {
  frame: [number, number];
}

/**
 * Entries of one pack in runs whose frames follow each other with no byte between: each run is one
 * ranged read, and every byte read belongs to an entry wanted.
 */
export function frameRuns<T extends FramedEntry>(entries: T[]): T[][] {
  const sorted = [...entries].sort((a, b) => a.frame[0] - b.frame[0]);
  const runs: T[][] = [];
  let end = -1;
  for (const e of sorted) {
    const run = runs[runs.length - 1];
    if (run && e.frame[0] === end) run.push(e);
    else runs.push([e]);
    end = e.frame[0] + e.frame[1];
  }
  return runs;
}

export interface FramedRead {
  store: Store;
  /** The pack's store object. */
  object: string;
  /** One run (frameRuns): entries whose frames follow each other. */
  run: FramedEntry[];
  targets: Map<string, RestoreTarget>;
  /** The Zstandard engine asked for ("" for the best that works). */
  zstd: string;
  onBytes?: (n: number) => void;
}

/**
 * Reads a run of entries alone from their pack: one ranged read of exactly their frames, which
 * decompress to exactly their tar members. Each entry is verified by its own digest and placed as a
 * whole pack's are (PackRestorer); the range may not expand past the entries' bytes plus tar overhead.
 */
export async function readFramed(read: FramedRead): Promise<PackReadResult> {
  const { run } = read;
  const first = run[0];
  const last = run[run.length - 1];
  if (!first || !last) return { restored: [], bad: [], refused: [], packError: null, bytes: 0 };
  const offset = first.frame[0];
  const length = last.frame[0] + last.frame[1] - offset;
  const pack = { sha256: null, size: length, entryBytes: sumSizes(run), entries: run.length };
  let body: AsyncIterable<Buffer>;
  try {
    body = await read.store.getRange(read.object, offset, length);
  } catch (e) {
    // A pack that is missing, short or not a file is that object's fault, not the store's (isObjectFault).
    const r = unreadPack(run, "not read: pack unreadable", e as Error);
    return isObjectFault(e) ? r : { ...r, storeFault: true };
  }
  const fault = { store: false };
  const from = storeSide(body, fault);
  const r = await readPack({
    from,
    pack,
    wanted: run,
    targets: read.targets,
    zstd: read.zstd,
    onBytes: read.onBytes,
  });
  return fault.store ? { ...r, storeFault: true } : r;
}

/** The store's bytes, noting when the store itself failed them (not the data: a damaged frame is the entry's fault). */
async function* storeSide(body: AsyncIterable<Buffer>, fault: { store: boolean }): AsyncIterable<Buffer> {
  const it = body[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Buffer>;
    try {
      next = await it.next();
    } catch (e) {
      fault.store = true;
      throw e;
    }
    if (next.done) return;
    yield next.value;
  }
}

function sumSizes(run: WantedEntry[]): number {
  return run.reduce((s, e) => s + e.size, 0);
}
