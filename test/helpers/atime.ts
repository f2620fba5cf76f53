import os from "node:os";
import path from "node:path";
import { atimeRecordsReads } from "../../src/cache/usage/usage.js";
import { tempDir } from "./sandbox.js";
import { canMountTmpfs, mountTmpfs } from "./tmpfs.js";

/** Whether this machine's temp folder records reads in access times (relatime), as most do. */
export const tempRecordsReads: boolean = atimeRecordsReads(os.tmpdir());

/**
 * A folder where reads move access times, for tests of use learnt from them: the temp folder when
 * it does, else (a noatime machine) a relatime tmpfs mounted for the test, else null (skip: the
 * test cannot show what it is about here).
 */
export function relatimeFolder(name = "relatime"): string | null {
  if (tempRecordsReads) return tempDir(name);
  if (!canMountTmpfs) return null;
  const dir = path.join(tempDir(name), "mnt");
  mountTmpfs(dir, "256m", "relatime");
  return dir;
}
