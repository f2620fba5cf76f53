import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Manifest } from "../manifest/manifest.js";

/**
 * What this machine remembers between `kcache restore` and `kcache save` of one workload: the key it
 * restored and the manifest that is the parent of the next save, plus each entry's stat signature
 * and digest, so a save re-reads only entries that changed.
 */
export interface LocalState {
  version: 1;
  primaryKey: string;
  /** The manifest restored or last saved, with where it came from. */
  parent: { key: string; scope: string; exact: boolean; manifest: Manifest } | null;
  /** cache name -> entry name -> [signature, sha256]. */
  index: Record<string, Record<string, [string, string]>>;
}

export { stateDir } from "../state-dir.js";

/** One state file per workload prefix and set of cache paths. */
export function stateFile(dir: string, prefix: string, cachePaths: string[]): string {
  const id = createHash("sha256")
    .update(`${prefix}\0${cachePaths.join("\0")}`)
    .digest("hex")
    .slice(0, 16);
  return path.join(dir, `${prefix.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 60)}-${id}.json`);
}

export function readState(file: string): LocalState | null {
  try {
    const s = JSON.parse(fs.readFileSync(file, "utf8")) as LocalState;
    return s.version === 1 ? s : null;
  } catch {
    return null;
  }
}

/** Writes the state atomically (temp + rename). */
export function writeState(file: string, state: LocalState): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state));
  fs.renameSync(tmp, file);
}
