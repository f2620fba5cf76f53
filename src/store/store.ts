import type { Readable } from "node:stream";
import { StoreError } from "../errors.js";

export interface StoredObject {
  name: string;
  size: number;
  modified: Date;
}

/** What a store can do beyond reading and writing objects; commands that need more ask first. */
export interface StoreCapabilities {
  /** `list` returns every object under a prefix (GitHub's cache returns only the newest match). */
  listAll: boolean;
  /** `delete` removes objects (GitHub's cache evicts by itself and cannot delete). */
  delete: boolean;
  /** Objects can vanish on their own (GitHub evicts entries): a key is usable only while all its packs exist. */
  evicts?: boolean;
  /**
   * `createIfAbsent` can never replace another writer's object (a hard link, a reservation): what it
   * created is what is stored, with no read-back. S3-compatible servers may ignore If-None-Match.
   */
  atomicCreate?: boolean;
}

/**
 * What kcache needs of a place to keep packs and manifests. Object names are "/"-separated. An
 * object is visible to get/list only once completely written.
 */
export interface Store {
  /** Where it is, for messages ("local store /var/cache/kcache"). */
  readonly description: string;
  /** When it cannot list all or delete: how to give it that (GitHub's cache: a token for the REST API). */
  readonly capabilityHint?: string;
  readonly capabilities: StoreCapabilities;
  /** How long a transfer may sit without progress before it fails (a stalled store); unset: no bound of its own. */
  readonly idleTimeoutMs?: number;
  /**
   * Writes an object from a stream, replacing any object of that name. `expectedBytes`, when known,
   * lets a remote store bound the whole transfer by its size.
   */
  put(name: string, body: Readable, expectedBytes?: number): Promise<{ size: number }>;
  /** Writes a small object only if none of that name exists; false when one did. */
  createIfAbsent(name: string, body: Buffer): Promise<boolean>;
  /** The file holding an object, for a store that is a folder on this machine (read in place by worker threads). */
  localFile?(name: string): string;
  /** Streams an object; rejects with ObjectNotFound when it is absent. `expectedBytes` as for put. */
  get(name: string, expectedBytes?: number): Promise<Readable>;
  /**
   * Streams `length` bytes of an object from byte `offset` (one entry of a pack, read alone); rejects
   * with ObjectNotFound when it is absent. A range past the object's end fails the read.
   */
  getRange(name: string, offset: number, length: number): Promise<Readable>;
  /**
   * Reads a small object whole, or null when absent. `maxBytes`: what the caller's object may hold at
   * most (a live record: kilobytes); a larger one is refused as an ObjectFault where the store can
   * tell before reading it.
   */
  read(name: string, maxBytes?: number): Promise<Buffer | null>;
  exists(name: string): Promise<boolean>;
  /** Objects whose name starts with `prefix`, newest first. */
  list(prefix: string): Promise<StoredObject[]>;
  /** Deletes an object; deleting a missing one is not an error. */
  delete(name: string): Promise<void>;
  /** Removes temporary files left by writers that died (killed saves); returns how many. */
  reapTemporary?(): Promise<number>;
}

export class ObjectNotFound extends Error {
  readonly code = "ENOENT";
  constructor(readonly object: string) {
    super(`${object}: no such object`);
  }
}

/**
 * One object is at fault, not the store: shorter than a range asked of it, larger than its reader
 * allows, or not a file the store could have written (a FIFO, a device, a link or a folder where a
 * local store's object should lie). A StoreError, so whatever tolerates a failing store tolerates it.
 */
export class ObjectFault extends StoreError {}

/**
 * Whether a failed read is the object's own fault, to be refused alone, rather than the store's.
 * An absent object (ObjectNotFound: `kcache prune` deletes a live record and its pack one at a time,
 * so a prune under way or killed leaves a record without its pack) or a damaged one (ObjectFault)
 * says nothing of the next object: a lookup refuses that entry and the job compiles it. Anything
 * else (a connection refused or reset, a stall, a 5xx after the retries, a local disk's I/O error)
 * is the store failing, and every later request would wait on it too: the store is given up on.
 */
export function isObjectFault(e: unknown): boolean {
  return e instanceof ObjectNotFound || e instanceof ObjectFault;
}
