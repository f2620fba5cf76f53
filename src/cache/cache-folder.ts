import path from "node:path";
import picomatch from "picomatch";
import type { CacheFolder, CacheKind, CacheKindName, FoundEntry, ScanResult } from "../kinds/kind.js";
import { cacheKind, detectKind } from "../kinds/registry.js";

/** What a folder's scan found once its include and exclude patterns were applied. */
export interface FolderScan extends ScanResult {
  /** Entries the patterns left out. */
  filtered: number;
}

// The pattern syntax of @actions/glob, which actions/cache uses: *, ?, [...] and **; no braces.
const GLOB = { dot: true, nobrace: true, noextglob: true } as const;

/** The kind a folder is handled as: its configured kind, else what was saved, else its layout. */
export function folderKind(folder: CacheFolder, saved?: CacheKindName): CacheKind | null {
  if (folder.kind !== "auto") return cacheKind(folder.kind);
  const name = saved ?? detectKind(folder.path);
  return name ? cacheKind(name) : null;
}

/** Scans a folder as `kind` and keeps only the entries its patterns select. */
export async function scanFolder(folder: CacheFolder, kind: CacheKind): Promise<FolderScan> {
  return selectedOf(folder, await kind.scan(folder.path));
}

/** Of a scan of the whole folder, the entries its patterns select. */
export function selectedOf(folder: CacheFolder, scan: ScanResult): FolderScan {
  if (!folder.include?.length && !folder.exclude?.length) return { ...scan, filtered: 0 };
  const included = folder.include?.length ? picomatch(folder.include, GLOB) : () => true;
  const excluded = folder.exclude?.length ? picomatch(folder.exclude, GLOB) : () => false;
  const selected = (e: FoundEntry) => {
    const parts = e.name.split("/");
    const ancestors = parts.map((_, i) => parts.slice(0, i + 1).join("/"));
    return ancestors.some((a) => included(a)) && !ancestors.some((a) => excluded(path.join(folder.path, a)));
  };
  const entries = scan.entries.filter(selected);
  return { ...scan, entries, filtered: scan.entries.length - entries.length };
}
