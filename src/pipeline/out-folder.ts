import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { isIoFault } from "../cache/faults.js";
import { tryHoldLock } from "../cache/persistent/folder-lock.js";
import { UsageError } from "../errors.js";
import { KCACHE_PRIVATE_PREFIX } from "../kinds/kind.js";
import type { Log } from "../log.js";

/**
 * A run's out folder (logs, telemetry, kcache-report.json; compare's pages) serves one run at a
 * time. Two `kcache run`s of one profile in one checkout shared `.kcache/<profile>/`: each command's
 * telemetry file took both runs' kernel loads, so each report counted the other's kernels too. A run
 * holds its folder by a lock file in it (cache/persistent/folder-lock.ts: a holder whose process is
 * gone holds nothing). A run that was given no folder and finds the default one held takes the next
 * free `<folder>@2`, `@3`...: a profile's name has no `@`, so that is never another profile's
 * folder. A folder the user named (--out) that another run holds is refused with the fix.
 */
const RUN_LOCK = `${KCACHE_PRIVATE_PREFIX}run`;
const MOST_AT_ONCE = 64;

/** An out folder this run holds until release(). */
export interface OutFolder {
  dir: string;
  release(): void;
}

/**
 * Takes `requested` (resolved against `cwd`) for this run; `given` when the user named it (--out),
 * which is refused while another run holds it, else the next free sibling is taken and said.
 */
export function holdOutFolder(requested: string, opts: { given: boolean; cwd: string; log: Log }): OutFolder {
  const first = path.resolve(opts.cwd, requested);
  for (let n = 1; n <= MOST_AT_ONCE; n++) {
    const dir = n === 1 ? first : `${first}@${n}`;
    let took: ReturnType<typeof tryHoldLock>;
    try {
      took = tryHoldLock(dir, RUN_LOCK);
    } catch (e) {
      if (!isIoFault(e)) throw e;
      return unwritable(requested, first, e as Error, opts);
    }
    if ("held" in took) {
      if (n > 1) opts.log.info(`${first} is in use by another kcache run; this run writes to ${dir}`);
      return { dir, release: () => took.held.release() };
    }
    if (opts.given)
      throw new UsageError(
        `--out ${requested}: another kcache run (${took.holder}) is writing to ${first}; give each run its own --out, or leave --out out and each run gets a folder of its own`,
      );
  }
  throw new UsageError(
    `${first} and ${MOST_AT_ONCE - 1} folders beside it are in use by other kcache runs; pass --out`,
  );
}

/**
 * The out folder cannot be made or written (a file where it should be, a read-only checkout, a full
 * disk): --out is refused naming it; the default one gives way to a folder of this run's own in the
 * temporary folder, said, so the job's commands and its save still run.
 */
function unwritable(
  requested: string,
  first: string,
  e: Error,
  opts: { given: boolean; log: Log },
): OutFolder {
  if (opts.given)
    throw new UsageError(
      `--out ${requested}: ${first} cannot be written (${e.message}); name a folder this job can write`,
    );
  let dir: string;
  try {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), `kcache-run-${path.basename(first)}-`));
  } catch (t) {
    throw new UsageError(
      `${first} cannot be written (${e.message}), nor the temporary folder (${(t as Error).message}); pass --out a folder this job can write`,
    );
  }
  opts.log.warn(`${first} cannot be written (${e.message}); this run's logs and report go to ${dir}`);
  const took = tryHoldLock(dir, RUN_LOCK);
  return { dir, release: () => ("held" in took ? took.held.release() : undefined) };
}

/** Runs `fn` in the out folder it holds (holdOutFolder), letting it go when `fn` ends. */
export async function inOutFolder<T>(
  requested: string,
  opts: { given: boolean; cwd: string; log: Log },
  fn: (dir: string) => Promise<T>,
): Promise<T> {
  const out = holdOutFolder(requested, opts);
  try {
    return await fn(out.dir);
  } finally {
    out.release();
  }
}
