import fs from "node:fs";
import path from "node:path";
import type { CacheFolder } from "../../kinds/kind.js";
import { mayHoldKernels } from "../../kinds/registry.js";
import type { Log } from "../../log.js";

/**
 * A trap benchmark scripts fall into under any cache tool: FLA's run_benchmark_compare.py clears
 * `$TRITON_CACHE_DIR/cache` "to avoid cross-commit contamination", but Triton's cache is
 * `$TRITON_CACHE_DIR` itself, so with the variable set the clear removes nothing (and without a
 * `cache` folder there, does nothing at all). While a command runs, an empty `cache` folder stands in
 * each Triton cache root as a tripwire; a command that removes or replaces it is warned about once,
 * with the fix. The tripwire goes before anything scans the folder again.
 */
export class ClearTrap {
  private warned = false;
  private readonly wires = new Map<string, { ino: number; ours: boolean }>();

  constructor(
    private readonly caches: CacheFolder[],
    private readonly log: Log,
  ) {}

  /** Before a command: a tripwire in each Triton cache root that has none. */
  arm(): void {
    for (const c of this.caches.filter(mayHoldKernels)) {
      const wire = path.join(c.path, "cache");
      try {
        let ours = false;
        if (!fs.existsSync(wire)) {
          fs.mkdirSync(wire);
          ours = true;
        }
        this.wires.set(c.path, { ino: fs.statSync(wire).ino, ours });
      } catch {
        // A folder kcache cannot write: no tripwire there.
      }
    }
  }

  /** After a command: warn (once) if it removed or replaced a tripwire, then take ours away. */
  disarm(command: string): void {
    for (const [root, w] of this.wires) {
      const wire = path.join(root, "cache");
      let ino: number | null = null;
      try {
        ino = fs.statSync(wire).ino;
      } catch {
        ino = null;
      }
      if (ino !== w.ino && !this.warned) {
        this.warned = true;
        this.log.warn(
          `${command} ${ino === null ? "removed" : "replaced"} ${wire}, a folder Triton never uses: Triton's cache is ${root} itself, so that clears nothing (FLA's run_benchmark_compare.py does this to drop autotune results between commits). Set autotune: fresh in the profile to re-tune from cached binaries (or pinned, for winners a benchmark profile tuned), or clear the cache root itself`,
        );
      }
      if (w.ours && ino !== null) fs.rmSync(wire, { recursive: true, force: true });
    }
    this.wires.clear();
  }
}
