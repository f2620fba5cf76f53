import type { Readable } from "node:stream";

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
  /** Reads a small object whole, or null when absent. */
  read(name: string): Promise<Buffer | null>;
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
