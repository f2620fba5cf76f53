import fs from "node:fs";
import path from "node:path";
import { readUnseen } from "../unseen-read.js";
import {
  type CacheKind,
  type EntryFile,
  type FoundEntry,
  KCACHE_PRIVATE_PREFIX,
  type ScanResult,
} from "./kind.js";

/**
 * Triton's FileCacheManager layout (3.x): one folder per cache key. A kernel folder is complete when
 * every `__grp__<name>.json` in it parses and lists only children present in that folder; a folder
 * without a group file is complete when it holds a file Triton looks up by name alone (a launcher
 * `.so`, an `.autotune.json`, Triton-Ascend's `precompiled.h`). Group files hold absolute child
 * paths, so they are stored relative and rewritten to the restore location.
 *
 * Precompiled headers (`precompiled.h.gch`, Triton-Ascend's launcher header) are never saved: clang
 * checks the mtime and size of every header a .gch was built from and refuses a stale one, and
 * Triton-Ascend only checks that the .gch exists, so a restored one breaks every launcher build once
 * the headers are reinstalled. Without it Triton-Ascend rebuilds it once, from the restored
 * precompiled.h (see the README's "On Ascend").
 */
const GROUP = /^__grp__.+\.json$/;
const AUTOTUNE = /\.autotune\.json$/;
const SINGLE_FILE = [/\.so$/, /\.autotune\.json$/, /^precompiled\.h$/, /\.pyd$/, /\.dll$/];
/** Build products valid only against this machine's headers, by their mtimes: never saved. */
const MACHINE_LOCAL = /\.(gch|pch)$/;
const TEMP_DIR = /^tmp\./;
/** Triton <= 3.2 wrote `<file>.tmp.pid_<pid>_<uuid>` beside the file before renaming it in. */
const TEMP_FILE = /\.tmp\.pid_\d+_/;
const LOCK = /(^lock$|\.lock$)/;
/**
 * Entry folder names: Triton's keys (base32 since 3.3, urlsafe base64 before, which may start with
 * '-'), but any single path segment that is not a dot name is accepted.
 */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.=+-]*$/;

/**
 * How Triton names entry folders: base32 of a sha256 (52 characters) or an md5 (26: npu_utils), or
 * before 3.3 urlsafe base64 of the same (43 or 22).
 */
const TRITON_KEY = /^([A-Z2-7]{52}|[A-Z2-7]{26}|[A-Za-z0-9_-]{43}|[A-Za-z0-9_-]{22})$/;

/** What a scan leaves out, by reason (ScanResult without its entries). */
type Tally = Omit<ScanResult, "entries">;
const noTally = (): Tally => ({ tempDirs: 0, lockFiles: 0, localFiles: 0, otherFiles: 0 });

/**
 * Whether a folder's top level looks like Triton's cache: only folders (and locks), each named as
 * Triton names keys, or at least one holding a file Triton writes (a group file or a launcher).
 */
export function looksLikeTritonCache(root: string, top: fs.Dirent[]): boolean {
  const dirs = top.filter((d) => d.isDirectory() && !TEMP_DIR.test(d.name));
  if (dirs.length === 0 || top.some((d) => !d.isDirectory() && !LOCK.test(d.name))) return false;
  if (dirs.every((d) => TRITON_KEY.test(d.name))) return true;
  return dirs.some((d) => {
    try {
      return fs
        .readdirSync(path.join(root, d.name))
        .some((f) => GROUP.test(f) || SINGLE_FILE.some((re) => re.test(f)));
    } catch {
      return false;
    }
  });
}

/**
 * One entry folder's files as a scan of the cache finds them (locks, temp files and machine-local
 * files left out, counted in `tally`); null when the folder or one of its files vanished under it
 * (another process moved the entry away: not there, not an error).
 */
export function scanEntryFolder(dir: string, name: string, tally: Tally = noTally()): FoundEntry | null {
  const files: EntryFile[] = [];
  let inside: fs.Dirent[];
  try {
    inside = fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if (vanished(e)) return null;
    throw e;
  }
  for (const f of inside) {
    if (f.isDirectory()) {
      if (TEMP_DIR.test(f.name)) tally.tempDirs++;
      else tally.otherFiles++;
      continue;
    }
    if (!f.isFile()) {
      tally.otherFiles++;
      continue;
    }
    if (LOCK.test(f.name)) {
      tally.lockFiles++;
      continue;
    }
    if (TEMP_FILE.test(f.name)) {
      tally.tempDirs++;
      continue;
    }
    if (MACHINE_LOCAL.test(f.name)) {
      tally.localFiles++;
      continue;
    }
    let st: fs.Stats;
    try {
      st = fs.statSync(path.join(dir, f.name));
    } catch (e) {
      if (vanished(e)) return null;
      throw e;
    }
    files.push({ rel: f.name, size: st.size, mtimeMs: st.mtimeMs, atimeMs: st.atimeMs, ino: st.ino });
  }
  return { name, files };
}

/**
 * One top-level item of a Triton cache as a save's scan takes it: an entry only when it is a folder
 * itself (`isDirectory` as lstat or readdir says it, never through a link, which could name any
 * folder on the machine), not a compiler's temp folder nor kcache's own; its files as
 * scanEntryFolder finds them (links in it left out). Anything else is counted in `tally`.
 */
function scanTopLevel(root: string, name: string, isDirectory: boolean, tally: Tally): FoundEntry | null {
  if (name.startsWith(KCACHE_PRIVATE_PREFIX)) return null;
  if (!isDirectory) {
    if (LOCK.test(name)) tally.lockFiles++;
    else tally.otherFiles++;
    return null;
  }
  if (TEMP_DIR.test(name)) {
    tally.tempDirs++;
    return null;
  }
  return scanEntryFolder(path.join(root, name), name, tally);
}

/**
 * The entry `name` of the cache at `root`, read alone exactly as a save's scan of the whole cache
 * would find it (scanTopLevel: a link where the entry's folder should be is no entry); null when it
 * is none, or gone.
 */
export function scanEntryAt(root: string, name: string, tally: Tally = noTally()): FoundEntry | null {
  const st = fs.lstatSync(path.join(root, name), { throwIfNoEntry: false });
  return st ? scanTopLevel(root, name, st.isDirectory(), tally) : null;
}

export const tritonKind: CacheKind = {
  kind: "triton",
  entryShape: "folder",
  lookupsSeenByHook: true,

  async scan(root: string): Promise<ScanResult> {
    const result: ScanResult = { entries: [], tempDirs: 0, lockFiles: 0, localFiles: 0, otherFiles: 0 };
    let top: fs.Dirent[];
    try {
      top = await fs.promises.readdir(root, { withFileTypes: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return result;
      throw e;
    }
    for (const d of top) {
      const entry = scanTopLevel(root, d.name, d.isDirectory(), result);
      if (entry) result.entries.push(entry);
    }
    return result;
  },

  incompleteReason(root: string, entry: FoundEntry): string | null {
    if (entry.files.length === 0) return "empty folder";
    const present = new Set(entry.files.map((f) => f.rel));
    const groups = entry.files.filter((f) => GROUP.test(f.rel));
    if (groups.length === 0) {
      return entry.files.some((f) => SINGLE_FILE.some((re) => re.test(f.rel)))
        ? null
        : "no group file (a compile that did not finish)";
    }
    for (const g of groups) {
      const children = readChildPaths(path.join(root, entry.name, g.rel));
      if (!children) return `${g.rel} does not parse as a Triton group file`;
      for (const [child, p] of Object.entries(children)) {
        const base = path.basename(p);
        if (!present.has(base)) return `${g.rel} lists ${child}, which is not in the entry`;
      }
    }
    return null;
  },

  isEntryName(name: string): boolean {
    return SEGMENT.test(name) && !TEMP_DIR.test(name);
  },

  isRelocatable(_entryName: string, rel: string): boolean {
    return GROUP.test(rel);
  },

  normalize(_root, _entryName, rel, data): Buffer {
    const parsed = parseGroup(data);
    if (!parsed) throw new Error(`${rel}: not a Triton group file`);
    const childPaths: Record<string, string> = {};
    for (const [child, p] of Object.entries(parsed.child_paths)) childPaths[child] = path.basename(p);
    return Buffer.from(JSON.stringify({ ...parsed, child_paths: childPaths }));
  },

  relocate(root, entryName, rel, data): Buffer {
    const parsed = parseGroup(data);
    if (!parsed) throw new Error(`${rel}: not a Triton group file`);
    const childPaths: Record<string, string> = {};
    for (const [child, p] of Object.entries(parsed.child_paths)) {
      childPaths[child] = path.join(root, entryName, path.basename(p));
    }
    return Buffer.from(JSON.stringify({ ...parsed, child_paths: childPaths }));
  },

  // FileCacheManager.put writes every file (kernels, group files, launchers, autotune results) into a
  // tmp.pid_* folder and os.replace()s it in: an existing file is never opened for writing.
  linkSafe(): boolean {
    return true;
  },

  isAutotuneResult(entry: FoundEntry): boolean {
    return entry.files.some((f) => AUTOTUNE.test(f.rel));
  },

  isKernel(entry: FoundEntry): boolean {
    return entry.files.some((f) => GROUP.test(f.rel));
  },

  packOrder(files: EntryFile[]): EntryFile[] {
    const key = (f: EntryFile) => `${GROUP.test(f.rel) ? "1" : "0"}${f.rel}`;
    return [...files].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  },
};

interface GroupFile {
  child_paths: Record<string, string>;
  [k: string]: unknown;
}

function parseGroup(data: Buffer): GroupFile | null {
  try {
    const v = JSON.parse(data.toString("utf8")) as unknown;
    if (!v || typeof v !== "object") return null;
    const cp = (v as { child_paths?: unknown }).child_paths;
    if (!cp || typeof cp !== "object" || Array.isArray(cp)) return null;
    if (!Object.values(cp).every((p) => typeof p === "string")) return null;
    return v as GroupFile;
  } catch {
    return null;
  }
}

function readChildPaths(file: string): Record<string, string> | null {
  try {
    return parseGroup(readUnseen(file))?.child_paths ?? null;
  } catch {
    return null;
  }
}

/** A file or folder that disappeared under a scan (moved or deleted by another process). */
function vanished(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}
