import type { FramedEntry } from "../../pack/read/framed-reader.js";

/** The most uncompressed bytes one live entry may hold (a Triton kernel's folder is kilobytes to a few MB). */
export const MAX_LIVE_ENTRY = 256 * 1024 * 1024;
/** The most bytes a live record may hold: its JSON is a few hundred bytes (names, a digest, sizes, a key). */
export const MAX_LIVE_RECORD = 64 * 1024;
const SHA256 = /^[0-9a-f]{64}$/;

/** What a live entry's record says of its pack: written after the pack, read before it. */
export interface LiveRecord {
  format: "kcache-live/1";
  cache: string;
  name: string;
  sha256: string;
  /** Uncompressed bytes of the entry's files, and how many. */
  size: number;
  files: number;
  /** Compressed bytes of its pack. */
  packBytes: number;
  /** The key of the job that compiled it. */
  key: string;
  at: string;
}

/**
 * The entry a live record promises, as a ranged read of its whole pack wants it; null when the record
 * is not one for this entry (another entry's name, another cache), or promises more than a live entry
 * may hold: such a record is hostile or damaged, and the kernel compiles.
 */
export function liveEntryOf(data: Buffer, cache: string, name: string): FramedEntry | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString("utf8"));
  } catch {
    return null;
  }
  // Any JSON value parses (null, a number, an array): only an object can be a record.
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return null;
  const r = parsed as Partial<LiveRecord>;
  const count = (v: unknown, max: number) => Number.isInteger(v) && (v as number) > 0 && (v as number) <= max;
  if (r.format !== "kcache-live/1" || r.cache !== cache || r.name !== name) return null;
  if (typeof r.sha256 !== "string" || !SHA256.test(r.sha256)) return null;
  if (
    !count(r.size, MAX_LIVE_ENTRY) ||
    !count(r.files, 10_000) ||
    !count(r.packBytes, MAX_LIVE_ENTRY + (1 << 20))
  )
    return null;
  return {
    cache,
    name,
    sha256: r.sha256,
    size: r.size as number,
    files: r.files as number,
    frame: [0, r.packBytes as number],
  };
}
