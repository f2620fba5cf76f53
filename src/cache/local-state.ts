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
  /**
   * Left by a restore that stamped its entries' access times (cache/usage.ts): per cache, whether
   * reads move access times there. A save reads use from atimes only where this says true.
   */
  usage?: { atime: Record<string, boolean> };
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

/**
 * Forgets what the last restore learnt about use (a `--lookup-only` restore placed nothing and
 * stamped nothing): a save after it must not read use from stale stamps.
 */
export function forgetUsage(file: string): void {
  const state = readState(file);
  if (!state?.usage) return;
  delete state.usage;
  writeState(file, state);
}

/** The state a save leaves: the key it saved (or found) as the parent, and each saved entry's signature and digest. */
export function stateAfterSave(
  key: string,
  parent: LocalState["parent"],
  saved: { cache: string; entry: { name: string }; sig: string; digest: string | null }[],
): LocalState {
  const index: LocalState["index"] = {};
  for (const p of saved) {
    if (!p.digest) continue;
    const idx = index[p.cache] ?? {};
    idx[p.entry.name] = [p.sig, p.digest];
    index[p.cache] = idx;
  }
  return { version: 1, primaryKey: key, parent, index };
}
