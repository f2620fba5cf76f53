import fs from "node:fs";
import path from "node:path";
import { type CacheKind, entryFilePath, type FoundEntry, KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { makeFolders } from "../../make-folders.js";
import { ensureRealDirs } from "../../pack/read/real-dirs.js";
import { type OwnerRule, ownedName, ownerGone } from "../../pack/read/staging-owner.js";
import { copyUnseen, readUnseen } from "../../unseen-read.js";
import { removeWhole, TRASH } from "./remove-whole.js";

/**
 * A job's own cache folder on a persistent runner (`isolate: true`): `<folder>/.kcache-job-<where>-
 * <pid>-<random>`, named for the process that lasts as long as the job (process/job-anchor.ts). It
 * starts as the persistent folder's complete entries, shared by hard links where the kind says every
 * writer replaces files by rename (kinds' linkSafe), copied otherwise, with relocatable files (group
 * files, Inductor's pickles) rewritten for its path; the restore then adds the key's entries. Inside
 * the persistent folder, so links and renames never cross file systems; kcache's scans skip it.
 * What the job compiles lands here only; the end of a trusted job that passed merges it back
 * (merge.ts), any other end discards it, and a job killed on the way leaves it for the next restore
 * to remove once its process is gone (a day, for one of another container or host).
 */
export const JOB_FOLDER: OwnerRule = { prefix: `${KCACHE_PRIVATE_PREFIX}job-`, foreignMs: 24 * 3600_000 };

/** The persistent folder a path stands for: a job folder's parent (the path a job's variable was set to), else the path. */
export function persistentFolderOf(p: string): string {
  return path.basename(p).startsWith(JOB_FOLDER.prefix) ? path.dirname(p) : p;
}

export interface BuiltJobFolder {
  path: string;
  /** Complete entries of the persistent folder now in the job's. */
  entries: number;
  /** Files shared by hard links, and files copied (or rewritten for the new path). */
  linked: number;
  copied: number;
  seconds: number;
}

/** Makes a job folder in `root` holding its complete entries (see above); empty where `kind` is null (nothing to share). */
export async function buildJobFolder(
  kind: CacheKind | null,
  root: string,
  pid: number,
): Promise<BuiltJobFolder> {
  const t0 = performance.now();
  makeFolders(root);
  const job = path.join(root, ownedName(JOB_FOLDER.prefix, pid));
  fs.mkdirSync(job);
  const built: BuiltJobFolder = { path: job, entries: 0, linked: 0, copied: 0, seconds: 0 };
  if (!kind) return built;
  const scan = await kind.scan(root);
  for (const entry of scan.entries) {
    if (kind.incompleteReason(root, entry) !== null) continue;
    if (shareEntry(kind, entry, { from: root, to: job, root: job }, built)) built.entries++;
  }
  built.seconds = (performance.now() - t0) / 1000;
  return built;
}

/** Where shareEntry takes an entry from and puts it, and the cache folder its relocated files must name. */
export interface ShareWay {
  from: string;
  to: string;
  /** The folder the entry will be used in (`to`, or the folder a staged entry is then renamed into). */
  root: string;
}

/**
 * Puts one entry of `from` into `to`: each file linked or copied, relocatable ones rewritten for
 * `root`. False when it vanished or could not be read on the way (a job compiles it if it needs it);
 * what was put of it is removed, so no folder is left with part of an entry.
 */
export function shareEntry(
  kind: CacheKind,
  entry: FoundEntry,
  { from, to, root }: ShareWay,
  count: { linked: number; copied: number },
): boolean {
  const dest = path.join(to, entry.name);
  try {
    const parent = path.posix.dirname(entry.name);
    ensureRealDirs(to, parent === "." ? "" : parent);
    if (kind.entryShape === "folder") fs.mkdirSync(dest);
    for (const f of entry.files) {
      const src = entryFilePath(from, entry, f.rel);
      const out = entryFilePath(to, entry, f.rel);
      if (kind.isRelocatable(entry.name, f.rel)) {
        const stored = kind.normalize(from, entry.name, f.rel, readUnseen(src));
        fs.writeFileSync(out, kind.relocate(root, entry.name, f.rel, stored), { flag: "wx" });
        count.copied++;
      } else if (kind.linkSafe(entry.name, f.rel) && tryLink(src, out)) count.linked++;
      else {
        copyUnseen(src, out);
        count.copied++;
      }
    }
    return true;
  } catch {
    fs.rmSync(dest, { recursive: true, force: true });
    return false;
  }
}

/** A hard link where the file system allows one (false: copy instead: another device, no links, too many). */
function tryLink(src: string, dest: string): boolean {
  try {
    fs.linkSync(src, dest);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (
      code === "EXDEV" ||
      code === "EPERM" ||
      code === "EMLINK" ||
      code === "ENOTSUP" ||
      code === "EOPNOTSUPP"
    )
      return false;
    throw e;
  }
}

/** Removes the job folders in `root` whose jobs are gone, and deletions a killed kcache left; returns how many job folders. */
export function removeStaleJobFolders(root: string, now = Date.now()): number {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const n of names) {
    if (ownerGone(root, n, JOB_FOLDER, now)) {
      removeWhole(root, path.join(root, n));
      removed++;
    } else if (ownerGone(root, n, TRASH, now))
      fs.rmSync(path.join(root, n), { recursive: true, force: true });
  }
  return removed;
}
