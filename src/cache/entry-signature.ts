import { createHash } from "node:crypto";
import type { FoundEntry } from "../kinds/kind.js";

/**
 * A cheap fingerprint of an entry's files from their stats (name, size, mtime, inode). When it
 * matches what was recorded at the last restore or save, the entry's digest is reused without
 * reading a byte: that is what makes a no-change save take milliseconds.
 */
export function entrySignature(entry: FoundEntry): string {
  const h = createHash("sha1");
  for (const f of entry.files) h.update(`${f.rel}\0${f.size}\0${f.mtimeMs}\0${f.ino}\n`);
  return h.digest("base64url");
}
