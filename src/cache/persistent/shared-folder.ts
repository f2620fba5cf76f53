import fs from "node:fs";
import path from "node:path";
import type { CacheFolder } from "../../kinds/kind.js";
import { makeFolders } from "../../make-folders.js";
import { type OwnerRule, ownerGone, pidNamespace } from "../../pack/read/staging-owner.js";

/**
 * Whose a job's cache folder is, decided per cache by its restore and kept in the job's record: a
 * trusted save on a folder other jobs may write uploads only what it can attribute to its own job
 * (save/save-attribution.ts; docs/self-hosted.md, "Jobs at once"). Anything that runs as the
 * runner's user can write such a folder and set its files' times, so nothing in the folder itself
 * says whose an entry is: only the job's own record of what its processes wrote (the hook's), or a
 * declaration that nobody else writes there.
 *
 * - `declared-trusted`: the cache sets `trust-local: true` (the action's input, `--trust-local`):
 *   the runner runs only trusted jobs.
 * - `own-folder`: the job works in a folder of its own (isolate, or withheld autotune winners).
 * - `ephemeral-runner`: the CI says the machine runs this one job (GitHub-hosted runners).
 * - `fresh`: the folder was absent or empty when the restore began (a new machine or container).
 * - `shared`: none of these: a persistent runner's folder that other jobs may write.
 */
export type FolderOwners = "shared" | "declared-trusted" | "own-folder" | "ephemeral-runner" | "fresh";

/** What a restore records for the save to tell its job's entries from others'. */
export interface JobAttribution {
  /** cache name -> whose its folder is. */
  folders: Record<string, FolderOwners>;
  /** The file the job's hook writes (KCACHE_TELEMETRY_FILE): the files its processes wrote, with digests. */
  telemetry: string | null;
}

/** Whose folder `c` is, from what the restore found (the first rule that holds, in the order above). */
export function whoseFolder(
  c: CacheFolder,
  found: { ownFolder: boolean; heldAnything: boolean; ephemeral: boolean },
): FolderOwners {
  if (c.trustLocal) return "declared-trusted";
  if (found.ownFolder) return "own-folder";
  if (found.ephemeral) return "ephemeral-runner";
  if (!found.heldAnything) return "fresh";
  return "shared";
}

/**
 * Whether the folder at `root` holds anything at all: any name, complete entry or not (a compile in
 * progress shows first as its entry folder, a temp folder or a lock), kcache's own records among them.
 */
export function holdsAnything(root: string): boolean {
  try {
    return fs.readdirSync(root).length > 0;
  } catch {
    return false;
  }
}

/** The job's telemetry files in the state folder: named for the process that lasts as long as the job. */
const TELEMETRY: OwnerRule = { prefix: "kcache-hook-", foreignMs: 3 * 24 * 3600_000 };
const TELEMETRY_SUFFIX = "-telemetry.jsonl";

/**
 * The job's telemetry file, beside its local state and named for the job's process (every restore
 * and save step of one job names the same one): made empty when absent, kept when an earlier restore
 * of the same job made it (a save reads only what was written after its own restore began). Files of
 * jobs whose process is gone are removed on the way. Null when the state folder cannot be written.
 */
export function jobTelemetryFile(stateFile: string, jobPid: number): string | null {
  const dir = path.dirname(stateFile);
  const name = `${TELEMETRY.prefix}${pidNamespace()}-${jobPid}${TELEMETRY_SUFFIX}`;
  try {
    makeFolders(dir);
    for (const n of fs.readdirSync(dir))
      if (
        n !== name &&
        n.startsWith(TELEMETRY.prefix) &&
        n.endsWith(TELEMETRY_SUFFIX) &&
        ownerGone(dir, n, TELEMETRY)
      )
        fs.rmSync(path.join(dir, n), { force: true });
    const file = path.join(dir, name);
    // A regular file of the job's own, made without following a link someone left in its place.
    fs.closeSync(
      fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600),
    );
    return file;
  } catch {
    return null;
  }
}
