import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { dirKind } from "./dir.js";
import type { CacheKind, EntryFile, FoundEntry, ScanResult } from "./kind.js";
import { parseGroup } from "./triton.js";

/**
 * torch.compile's cache folder (`TORCHINDUCTOR_CACHE_DIR`, default `/tmp/torchinductor_<user>`), file
 * by file as the `dir` kind, with what makes it warm at another path:
 *
 * - `triton/<device>/<key>/`: Triton's cache for Inductor's kernels. Group files hold absolute child
 *   paths: stored as basenames, rewritten for the restore folder (as the `triton` kind does). A
 *   kernel file whose folder has no group file (a compile that did not finish) is not saved.
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
const GROUP = /^__grp__.+\.json$/;
const SINGLE_FILE = [/\.so$/, /\.autotune\.json$/, /^precompiled\.h$/];
const TRITON_FILE = /^triton\/[^/]+\/[^/]+\/[^/]+$/;
const PICKLED = /^(fxgraph|aotautograd)\//;
const MODULE = /\.py$/;
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

function tritonFolderFiles(root: string, entryName: string): string[] {
  try {
    return fs.readdirSync(path.join(root, path.dirname(entryName)));
  } catch {
    return [];
  }
}

function rewriteGroup(data: Buffer, child: (p: string) => string): Buffer {
  const parsed = parseGroup(data);
  if (!parsed) throw new Error("not a Triton group file");
  const childPaths: Record<string, string> = {};
  for (const [name, p] of Object.entries(parsed.child_paths)) childPaths[name] = child(path.basename(p));
  return Buffer.from(JSON.stringify({ ...parsed, child_paths: childPaths }));
}

const isGroup = (entryName: string) => TRITON_FILE.test(entryName) && GROUP.test(path.basename(entryName));

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
    const base = path.basename(entry.name);
    const siblings = tritonFolderFiles(root, entry.name);
    if (GROUP.test(base)) {
      let group: ReturnType<typeof parseGroup>;
      try {
        group = parseGroup(fs.readFileSync(path.join(root, entry.name)));
      } catch {
        group = null;
      }
      if (!group) return `${entry.name} does not parse as a Triton group file`;
      const missing = Object.values(group.child_paths).find((p) => !siblings.includes(path.basename(p)));
      return missing ? `${entry.name} lists ${path.basename(missing)}, which is not beside it` : null;
    }
    if (siblings.some((f) => GROUP.test(f)) || SINGLE_FILE.some((re) => re.test(base))) return null;
    return "a Triton kernel file without its group file (a compile that did not finish)";
  },

  isEntryName: dirKind.isEntryName,

  isRelocatable(entryName: string): boolean {
    return isGroup(entryName) || PICKLED.test(entryName) || MODULE.test(entryName);
  },

  normalize(root, entryName, _rel, data): Buffer {
    if (isGroup(entryName)) return rewriteGroup(data, (base) => base);
    let out = data;
    for (const spelling of rootSpellings(root))
      out = PICKLED.test(entryName)
        ? rewritePickle(out, spelling, ROOT_PLACEHOLDER)
        : replaceAll(out, spelling, ROOT_PLACEHOLDER);
    return out;
  },

  relocate(root, entryName, _rel, data): Buffer {
    if (isGroup(entryName))
      return rewriteGroup(data, (base) => path.join(root, path.dirname(entryName), base));
    return PICKLED.test(entryName)
      ? rewritePickle(data, ROOT_PLACEHOLDER, path.resolve(root))
      : replaceAll(data, ROOT_PLACEHOLDER, path.resolve(root));
  },

  packOrder(files: EntryFile[]): EntryFile[] {
    return files;
  },
};
