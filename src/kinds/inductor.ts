import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { dirKind } from "./dir.js";
import type { CacheKind, EntryFile, FoundEntry, ScanResult } from "./kind.js";
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
 *   python/kcache_pickle/rewrite.py: the pickle's opcodes rewritten, never its bytes substituted.
 * - generated modules (`<2 chars>/<hash>.py`): text; the folder's path in them (the output code's
 *   "kernel path" comments) replaced the same way. `.best_config` autotune results lie beside the
 *   modules and name nothing: stored as they are, at the same place under the new folder.
 *
 * Locks (`locks/`, `*.lock`), temp files (Triton's `tmp.*` folders, Inductor's `.<pid>.<tid>.tmp`)
 * and precompiled headers are never saved.
 */
const TRITON_FILE = /^triton\/[^/]+\/[^/]+\/[^/]+$/;
const PICKLED = /^(fxgraph|aotautograd)\//;
const MODULE = /\.py$/;
const BEST_CONFIG = /\.best_config$/;
/** Where a stored entry had the cache folder's path. */
export const ROOT_PLACEHOLDER = "@@KCACHE_INDUCTOR_CACHE_ROOT@@";

/** Whether a folder's top level is Inductor's: its graph caches, or its Triton folder beside generated modules. */
export function looksLikeInductorCache(top: fs.Dirent[]): boolean {
  const dirs = new Set(top.filter((d) => d.isDirectory()).map((d) => d.name));
  if (dirs.has("fxgraph") || dirs.has("aotautograd")) return true;
  return dirs.has("triton") && [...dirs].some((d) => /^[a-z0-9]{2}$/.test(d));
}

let rewriter: string | undefined;
/** python/kcache_pickle/rewrite.py, shipped beside the hook in the package and the action. */
function rewriterScript(): string {
  if (rewriter) return rewriter;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "python", "kcache_pickle", "rewrite.py");
    if (fs.existsSync(candidate)) {
      rewriter = candidate;
      return candidate;
    }
    const up = path.dirname(dir);
    if (up === dir)
      throw new Error("kcache's python/kcache_pickle/rewrite.py is missing from the installation");
    dir = up;
  }
}

/**
 * A pickle with `from` replaced by `to` inside its strings (and text-like bytes), or the data as it
 * is when it does not name `from` or cannot be rewritten (no python3, not a pickle): then it is
 * stored, or placed, unchanged.
 */
function rewritePickle(data: Buffer, from: string, to: string): Buffer {
  if (data[0] !== 0x80 || !data.includes(from)) return data;
  try {
    return execFileSync("python3", [rewriterScript(), from, to], {
      input: data,
      maxBuffer: data.length * 2 + (1 << 20),
      // Linear in the pickle's size (half a second for 20 MB): a minute means something is wrong.
      timeout: 120_000,
      stdio: ["pipe", "pipe", "ignore"],
    });
  } catch {
    return data;
  }
}

/** The folder's own spellings in the files: as configured and with links resolved, longest first. */
function rootSpellings(root: string): string[] {
  const spellings = new Set([path.resolve(root)]);
  try {
    spellings.add(fs.realpathSync(root));
  } catch {
    // not there yet
  }
  return [...spellings].sort((a, b) => b.length - a.length);
}

function replaceAll(data: Buffer, from: string, to: string): Buffer {
  return data.includes(from) ? Buffer.from(data.toString("utf8").split(from).join(to)) : data;
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
    let out = data;
    for (const spelling of rootSpellings(root))
      out = PICKLED.test(entryName)
        ? rewritePickle(out, spelling, ROOT_PLACEHOLDER)
        : replaceAll(out, spelling, ROOT_PLACEHOLDER);
    return out;
  },

  relocate(root, entryName, _rel, data): Buffer {
    if (isGroup(entryName))
      return tritonKind.relocate(root, path.dirname(entryName), path.basename(entryName), data);
    return PICKLED.test(entryName)
      ? rewritePickle(data, ROOT_PLACEHOLDER, path.resolve(root))
      : replaceAll(data, ROOT_PLACEHOLDER, path.resolve(root));
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

  packOrder(files: EntryFile[]): EntryFile[] {
    return files;
  },
};
