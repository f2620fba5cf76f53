import type { CacheKind } from "../kinds/kind.js";

/**
 * What a restore asks of one pack, shared by its readers in this thread and on worker threads: the
 * pack as the manifest promises it, the entries wanted from it, the folders they go to, and what came
 * of it. Every bound a reader enforces comes from here, not from the pack's own bytes.
 */

/** What the manifest promises of a pack as a whole: reading stops as soon as the pack exceeds it. */
export interface PromisedPack {
  /**
   * The whole pack's digest; null for a part of a pack read alone (entries' frames, by a ranged
   * read), where each entry's own digest is what vouches for it.
   */
  sha256: string | null;
  /** Compressed bytes. */
  size: number;
  /** Uncompressed bytes of every entry in the pack, live or not. */
  entryBytes: number;
  entries: number;
}

/** An entry the manifest promises in a pack. */
export interface WantedEntry {
  cache: string;
  name: string;
  sha256: string;
  size: number;
  files: number;
}

/** A cache folder entries are restored into. */
export interface RestoreTarget {
  kind: CacheKind;
  root: string;
  /** A private folder inside `root` (same filesystem) where entries are assembled before rename. */
  staging: string;
  /**
   * An entry found in place is kept, and the staged copy dropped (an entry fetched while the job
   * runs: the job's own processes may have written it since). Default: replaced when it differs.
   */
  keepExisting?: boolean;
}

export interface PackReadResult {
  restored: WantedEntry[];
  /** Entries that failed verification or were missing from the pack, with the reason. */
  bad: { entry: string; reason: string }[];
  /** Tar members refused as unsafe (links, devices, paths leaving the cache, unknown caches). */
  refused: string[];
  /** Set when the pack itself could not be read to its end. */
  packError: string | null;
  /** Compressed bytes read. */
  bytes: number;
  /** The store failed or stalled the read (not the data): set by ranged reads of entries (framed-reader.ts). */
  storeFault?: boolean;
  /** torch.compile's pickles rewritten for their new folder: by one process per pack, how many, how long. */
  rewriter?: { processes: number; files: number; seconds: number };
}
