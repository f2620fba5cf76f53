import fs from "node:fs";
import path from "node:path";
import { dirKind } from "./dir.js";
import type { CacheKind, EntryFile, FoundEntry, ScanResult } from "./kind.js";
import {
  normalizePickle,
  normalizePickleInto,
  pickleNormalization,
  pickleRelocation,
  relocatePickle,
} from "./pickle-rewriter.js";
import { normalizeText, relocateText } from "./root-placeholder.js";
import { tritonKind } from "./triton.js";

/**
 * torch.compile's cache folder (`TORCHINDUCTOR_CACHE_DIR`, default `/tmp/torchinductor_<user>`), file
 * by file as the `dir` kind, with what makes it warm at another path:
 *
 * - `triton/<device>/<key>/`: Triton's cache for Inductor's kernels, each folder judged and relocated
 *   by the `triton` kind's rules: group files' absolute child paths stored as basenames and rewritten
 *   for the restore folder; a folder whose compile did not finish (no group file, or one listing a
 *   file that is not there) is not saved.
 * - `fxgraph/**` and `aotautograd/**`: the FX graph and AOTAutograd cache entries, pickles that name
 *   the cache folder (generated modules' paths, the bundled Triton kernels' folders and group files).
 *   Stored with the folder replaced by a placeholder and written back for the new folder, through
 *   python/kcache_pickle/rewrite.py (pickle-rewriter.ts): the pickle's opcodes rewritten, never its
 *   bytes substituted; one that cannot be rewritten exactly is neither stored nor placed.
 * - generated modules (`<2 chars>/<hash>.py`): the folder's path in them (the output code's
 *   "kernel path" comments) replaced the same way, byte for byte (root-placeholder.ts). `.best_config` autotune results lie beside the
 *   modules and name nothing: stored as they are, at the same place under the new folder.
 *
 * Locks (`locks/`, `*.lock`), temp files (Triton's `tmp.*` folders, Inductor's `.<pid>.<tid>.tmp`)
 * and precompiled headers are never saved.
 */
const TRITON_FILE = /^triton\/[^/]+\/[^/]+\/[^/]+$/;
const PICKLED = /^(fxgraph|aotautograd)\//;
const MODULE = /\.py$/;
const BEST_CONFIG = /\.best_config$/;

/** Whether a folder's top level is Inductor's: its graph caches, or its Triton folder beside generated modules. */
export function looksLikeInductorCache(top: fs.Dirent[]): boolean {
  const dirs = new Set(top.filter((d) => d.isDirectory()).map((d) => d.name));
  if (dirs.has("fxgraph") || dirs.has("aotautograd")) return true;
  return dirs.has("triton") && [...dirs].some((d) => /^[a-z0-9]{2}$/.test(d));
}

/** The folder's own spellings in the files: as configured and with links resolved. */
function rootSpellings(root: string): string[] {
  const spellings = new Set([path.resolve(root)]);
  try {
    spellings.add(fs.realpathSync(root));
  } catch {
    // not there yet
  }
  return [...spellings];
}

/** The Triton kernel folder a file of `triton/<device>/<key>/` belongs to, as the `triton` kind sees an entry. */
function tritonFolder(root: string, entryName: string): FoundEntry {
  const name = path.dirname(entryName);
  let files: string[];
  try {
    files = fs.readdirSync(path.join(root, name));
  } catch {
    files = [];
  }
  return { name, files: files.map((rel) => ({ rel, size: 0, mtimeMs: 0, atimeMs: 0, ino: 0 })) };
}

/** A Triton group file of the nested cache, relocated by the `triton` kind (its entry is the folder). */
const isGroup = (entryName: string) =>
  TRITON_FILE.test(entryName) && tritonKind.isRelocatable(path.dirname(entryName), path.basename(entryName));

export const inductorKind: CacheKind = {
  kind: "inductor",
  entryShape: "file",
  lookupsSeenByHook: false,

  async scan(root: string): Promise<ScanResult> {
    const result = await dirKind.scan(root);
    const entries: FoundEntry[] = [];
    for (const e of result.entries) {
      const base = path.basename(e.name);
      if (e.name.startsWith("locks/") || /\.lock$/.test(base)) result.lockFiles++;
      else if (/(^|\/)tmp\.[^/]*\//.test(e.name) || /\.tmp$/.test(base)) result.tempDirs++;
      else if (/\.(gch|pch)$/.test(base)) result.localFiles++;
      else entries.push(e);
    }
    return { ...result, entries };
  },

  incompleteReason(root: string, entry: FoundEntry): string | null {
    if (!TRITON_FILE.test(entry.name)) return null;
    const why = tritonKind.incompleteReason(root, tritonFolder(root, entry.name));
    return why ? `${path.dirname(entry.name)}: ${why}` : null;
  },

  isEntryName: dirKind.isEntryName,

  isRelocatable(entryName: string): boolean {
    return isGroup(entryName) || PICKLED.test(entryName) || MODULE.test(entryName);
  },

  normalize(root, entryName, _rel, data): Buffer {
    if (isGroup(entryName))
      return tritonKind.normalize(root, path.dirname(entryName), path.basename(entryName), data);
    const roots = rootSpellings(root);
    return PICKLED.test(entryName) ? normalizePickle(data, roots) : normalizeText(data, roots);
  },

  relocate(root, entryName, _rel, data): Buffer {
    if (isGroup(entryName))
      return tritonKind.relocate(root, path.dirname(entryName), path.basename(entryName), data);
    return PICKLED.test(entryName)
      ? relocatePickle(data, path.resolve(root))
      : relocateText(data, path.resolve(root));
  },

  normalizeInto(root, entryName, _rel, data, out): number | null {
    if (!PICKLED.test(entryName)) return null;
    return normalizePickleInto(data, rootSpellings(root), out);
  },

  normalization(root, entryName, _rel, data) {
    return PICKLED.test(entryName) ? pickleNormalization(data, rootSpellings(root)) : null;
  },

  relocation(root, entryName, _rel, data) {
    return PICKLED.test(entryName) ? pickleRelocation(data, path.resolve(root)) : null;
  },

  // Inductor writes through write_atomic (a temp file renamed in) and its Triton folder through
  // FileCacheManager, except `.best_config`: PyTorch before 2.6 wrote it with open(path, "wb") over
  // the existing file, and LocalAutotuneCache writes it again on every hit. So it is copied.
  linkSafe(entryName: string): boolean {
    return !BEST_CONFIG.test(entryName);
  },

  isAutotuneResult(entry: FoundEntry): boolean {
    return BEST_CONFIG.test(entry.name);
  },

  // Its entries are files: a Triton kernel compiled under it is the group file in its triton/ folder.
  isKernel(entry: FoundEntry): boolean {
    return /(^|\/)__grp__[^/]+\.json$/.test(entry.name);
  },

  packOrder(files: EntryFile[]): EntryFile[] {
    return files;
  },
};
