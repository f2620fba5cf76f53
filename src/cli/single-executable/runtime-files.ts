import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ConfigError } from "../../errors.js";
import { makeFolders } from "../../make-folders.js";
import { stateDir } from "../../state-dir.js";

/**
 * The files the single executable needs as files, carried in it as assets and placed on disk on first
 * use: the Python hook and the pickle rewriter (Python processes read them from PYTHONPATH and a
 * path), the pack worker thread's script (a Worker runs a file), zstd.wasm and package.json (read
 * beside the code). Placed in the state folder under an id of their content, so an executable finds
 * its own files and never another build's; placed whole or not at all (a folder written aside and
 * renamed in), so kcache processes starting at once never see half a folder.
 */

/** The asset listing the others: their names (paths in the folder) and sizes, and the id of them all. */
export const RUNTIME_FILES_ASSET = "runtime-files.json";

export interface RuntimeFiles {
  /** kcache's version and a digest of every file: the folder's name. */
  id: string;
  /** Each file's path in the folder, to its size in bytes. */
  files: Record<string, number>;
  /** Each file's sha256 (hex): what a placed file must hold before kcache runs or loads it. */
  sha256?: Record<string, string>;
}

/** An asset of the executable by name (node:sea's getAsset), as bytes. */
export type AssetReader = (name: string) => Buffer;

/**
 * The folder holding the executable's files: the state folder's, placed there if it is missing or
 * damaged; where the state folder cannot be written, a folder of this process's own, removed as it
 * exits. Each file's content is checked against its digest, so that a file another process left
 * there at the right size (a leftover, a planted hook or library) is replaced before kcache runs or
 * loads it.
 */
export function placeRuntimeFiles(env: NodeJS.ProcessEnv, asset: AssetReader): string {
  const list = listed(asset);
  const state = stateFolder(env);
  try {
    return placedIn(state, list, asset);
  } catch (first) {
    try {
      const own = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-files-"));
      process.on("exit", () => fs.rmSync(own, { recursive: true, force: true }));
      return placedIn(own, list, asset);
    } catch (e) {
      throw new ConfigError(
        `the single executable cannot place the files it runs (the Python hook, the pack worker): not in ${state} (${(first as Error).message}), nor in the temporary folder ${os.tmpdir()} (${(e as Error).message}); set KCACHE_STATE_DIR (or TMPDIR) to a folder kcache can write`,
      );
    }
  }
}

/**
 * Where placeRuntimeFiles places the files in the state folder, touching nothing: the commands that
 * use none of them (entry.ts's start-up part) read their code's location from it, as the rest do.
 */
export function placedRoot(env: NodeJS.ProcessEnv, asset: AssetReader): string {
  return path.join(stateFolder(env), listed(asset).id);
}

/** The state folder's folder of placed files, each build's in a folder of its id. */
function stateFolder(env: NodeJS.ProcessEnv): string {
  return path.join(stateDir(env), "single-executable");
}

function listed(asset: AssetReader): RuntimeFiles {
  return JSON.parse(asset(RUNTIME_FILES_ASSET).toString("utf8")) as RuntimeFiles;
}

function placedIn(base: string, list: RuntimeFiles, asset: AssetReader): string {
  const root = path.join(base, list.id);
  if (isWhole(root, list)) return root;
  makeFolders(base);
  const aside = fs.mkdtempSync(path.join(base, `.${list.id}-`));
  try {
    for (const rel of Object.keys(list.files)) {
      const file = path.join(aside, rel);
      makeFolders(path.dirname(file));
      fs.writeFileSync(file, asset(rel));
    }
    // A folder left damaged (a file deleted or cut short by a cleaner) is replaced whole.
    if (fs.existsSync(root)) fs.renameSync(root, `${aside}.damaged`);
    fs.renameSync(aside, root);
    return root;
  } catch (e) {
    // Another kcache placed the same folder first: its rename won, and this one's files are not needed.
    if (isWhole(root, list)) return root;
    throw e;
  } finally {
    fs.rmSync(aside, { recursive: true, force: true });
    fs.rmSync(`${aside}.damaged`, { recursive: true, force: true });
  }
}

/** Whether `root` holds every listed file as a regular file of its listed size and digest. */
function isWhole(root: string, list: RuntimeFiles): boolean {
  return Object.entries(list.files).every(([rel, size]) => {
    const file = path.join(root, rel);
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (st?.isFile() !== true || st.size !== size) return false;
    const want = list.sha256?.[rel];
    return want === undefined || createHash("sha256").update(fs.readFileSync(file)).digest("hex") === want;
  });
}
