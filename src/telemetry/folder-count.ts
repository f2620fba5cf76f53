import fs from "node:fs";
import path from "node:path";

/**
 * Kernel compiles counted from the cache folder itself, for Triton builds without a compilation
 * listener (Triton < 3.4; Triton-Ascend's 3.2 line). Triton writes a kernel's group file
 * (`__grp__<name>.json`) last, once per compile, through an atomic rename: a group file that is new,
 * or has a new inode or mtime, after a command is one kernel that command compiled. Launchers,
 * npu_utils and autotune results are not kernels (the listener does not count them either).
 */
export type KernelSnapshot = Map<string, string>;

const GROUP = /^__grp__(.+)\.json$/;

/** The group files under `roots`, each with its inode and mtime. Cheap: two readdirs and a stat per kernel. */
export function snapshotKernels(roots: string[]): KernelSnapshot {
  const snap: KernelSnapshot = new Map();
  for (const root of roots) {
    let top: fs.Dirent[];
    try {
      top = fs.readdirSync(root, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const d of top) {
      if (!d.isDirectory() || d.name.startsWith("tmp.")) continue;
      let files: string[];
      try {
        files = fs.readdirSync(path.join(root, d.name));
      } catch {
        continue;
      }
      for (const f of files) {
        if (!GROUP.test(f)) continue;
        const file = path.join(root, d.name, f);
        try {
          const st = fs.statSync(file);
          snap.set(file, `${st.ino}:${st.mtimeMs}`);
        } catch {
          // removed while we looked
        }
      }
    }
  }
  return snap;
}

export interface FolderCount {
  compiled: number;
  /** Kernel names, most frequent first (at most 20). */
  kernels: string[];
}

/** What was compiled between `before` and `after`: group files that appeared or were rewritten. */
export function compiledBetween(before: KernelSnapshot, after: KernelSnapshot): FolderCount {
  const names = new Map<string, number>();
  let compiled = 0;
  for (const [file, stamp] of after) {
    if (before.get(file) === stamp) continue;
    compiled++;
    const name = GROUP.exec(path.basename(file))?.[1] ?? "?";
    names.set(name, (names.get(name) ?? 0) + 1);
  }
  const kernels = [...names]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 20)
    .map(([n]) => n);
  return { compiled, kernels };
}

/**
 * The Triton caches' group files between the commands of a run. The scan taken after one command
 * (or parallel group) is the next one's "before": one scan per command, not two.
 */
export class KernelFolders {
  private last: KernelSnapshot | null = null;

  constructor(readonly roots: string[]) {}

  /** Whether there is a folder to count in. */
  get counting(): boolean {
    return this.roots.length > 0;
  }

  /** The folders as they are now, from the last scan when nothing ran since. */
  before(): KernelSnapshot {
    return this.last ?? this.after();
  }

  /** Scans the folders now; the scan is the next command's "before". */
  after(): KernelSnapshot {
    this.last = snapshotKernels(this.roots);
    return this.last;
  }

  /** Something ran that was not scanned after: the next "before" scans again. */
  forget(): void {
    this.last = null;
  }
}
