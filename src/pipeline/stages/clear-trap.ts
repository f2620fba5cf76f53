import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { AutotunePolicy } from "../../cache/autotune/settings.js";
import type { CacheFolder } from "../../kinds/kind.js";
import { mayHoldKernels } from "../../kinds/registry.js";
import type { Log } from "../../log.js";
import { makeFolders } from "../../make-folders.js";

/**
 * A trap benchmark scripts fall into under any cache tool: FLA's run_benchmark_compare.py clears
 * `$TRITON_CACHE_DIR/cache` "to avoid cross-commit contamination", but Triton's cache is
 * `$TRITON_CACHE_DIR` itself, so with the variable set the clear removes nothing (and without a
 * `cache` folder there, does nothing at all). While a command runs, a `cache` folder holding a marker
 * file stands in each Triton cache root as a tripwire (a folder's inode number alone would not do: a
 * folder removed and made again often gets the same one); a command that removes or empties it is
 * warned about once, with the fix. The tripwire goes before anything scans the folder again.
 */
export class ClearTrap {
  private warned = false;
  /** Cache root -> whether kcache made its `cache` folder (else it only put its marker in one that was there). */
  private readonly wires = new Map<string, boolean>();
  /**
   * This process's marker: two jobs at once on one runner folder each keep their own, so one job's
   * disarming never reads as the other's command clearing the folder.
   */
  private readonly marker = `${MARKER}-${process.pid}-${randomBytes(4).toString("hex")}`;

  constructor(
    private readonly caches: CacheFolder[],
    private readonly log: Log,
    private readonly policy: AutotunePolicy,
  ) {}

  /** Before a command: a tripwire in each Triton cache root. */
  arm(): void {
    for (const c of this.caches.filter(mayHoldKernels)) {
      const wire = path.join(c.path, "cache");
      try {
        const ours = !fs.existsSync(wire);
        makeFolders(wire);
        fs.writeFileSync(
          path.join(wire, this.marker),
          "kcache: a command that clears this folder clears nothing Triton uses\n",
        );
        this.wires.set(c.path, ours);
      } catch {
        // A folder kcache cannot write: no tripwire there.
      }
    }
  }

  /** After a command: warn (once) if it removed or emptied a tripwire, then take the tripwire away. */
  disarm(command: string): void {
    for (const [root, ours] of this.wires) {
      const wire = path.join(root, "cache");
      const gone = !fs.existsSync(wire);
      if ((gone || !fs.existsSync(path.join(wire, this.marker))) && !this.warned) {
        this.warned = true;
        const fix =
          this.policy === "any"
            ? "Set autotune: fresh in the profile to re-tune from cached binaries (or pinned, for winners a benchmark profile tuned), or clear the cache root itself"
            : this.policy === "fresh"
              ? "Under autotune: fresh each Python process of the job tunes for itself from cached binaries (no result is served to a process that did not tune it), which is what the clear is for: it can go"
              : "Under autotune: pinned both sides run the winners a benchmark profile tuned on this device model with these settings, and a kernel without one is tuned once and that winner serves both sides: the clear can go";
        this.log.warn(
          `${command} ${gone ? "removed" : "cleared"} ${wire}, a folder Triton never uses: Triton's cache is ${root} itself, so that clears nothing (FLA's run_benchmark_compare.py does this to drop autotune results between commits). ${fix}`,
        );
      }
      fs.rmSync(path.join(wire, this.marker), { force: true });
      // Gone once empty: made by this job, or by another job beside it that has disarmed already.
      if (ours || isEmptyDir(wire)) {
        try {
          fs.rmdirSync(wire);
        } catch {
          // the command (or another job's tripwire) put something there: it stays
        }
      }
    }
    this.wires.clear();
  }
}

const MARKER = ".kcache-tripwire";

function isEmptyDir(dir: string): boolean {
  try {
    return fs.readdirSync(dir).length === 0;
  } catch {
    return false;
  }
}
