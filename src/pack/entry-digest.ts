import { createHash, type Hash } from "node:crypto";

/**
 * The digest of one cache entry: sha256 over each file's path within the entry, its size and its
 * stored (path-independent) bytes, in pack order. Pack writer and pack reader both use this, so an
 * entry verifies only if every file, its name and its place in the entry are as saved.
 */
export class EntryDigest {
  private readonly hash: Hash = createHash("sha256");
  size = 0;
  files = 0;

  beginFile(rel: string, size: number): void {
    this.hash.update(`${rel}\0${size}\0`);
    this.size += size;
    this.files += 1;
  }

  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }

  digest(): string {
    return this.hash.digest("hex");
  }
}
