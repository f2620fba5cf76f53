import path from "node:path";
import type { Tuning } from "../../manifest/manifest.js";
import { WITHHELD_REASONS } from "./policy.js";
import type { AutotuneRestore } from "./withhold.js";

/**
 * Which kernels of one command ran on a winner the job was given, and from whom, and which were
 * tuned in the command, and why: what makes a HEAD-vs-BASE comparison symmetric or not.
 */
export interface CommandAutotune {
  pinned: { kernel: string; producer: Omit<Tuning, "id"> | null; earlierInRun: boolean }[];
  fresh: { kernel: string; why: string }[];
}

/** A command's autotune lookups (the hook's), read against what the restore gave and withheld. */
export function commandAutotune(
  lookups: { kernel: string; hit: boolean; folder: string }[],
  restored: AutotuneRestore | null | undefined,
): CommandAutotune | null {
  if (lookups.length === 0) return null;
  const out: CommandAutotune = { pinned: [], fresh: [] };
  const tunedHere = new Set(lookups.filter((l) => !l.hit).map((l) => path.basename(l.folder)));
  for (const l of lookups) {
    const entry = path.basename(l.folder);
    if (l.hit) {
      if (tunedHere.has(entry)) continue; // tuned by an earlier process of this command
      const given = restored?.given.find((g) => g.entry === entry);
      out.pinned.push({ kernel: l.kernel, producer: given?.producer ?? null, earlierInRun: !given });
      continue;
    }
    const withheld = restored?.withheld.find((w) => w.entry === entry);
    out.fresh.push({
      kernel: l.kernel,
      why: withheld
        ? WITHHELD_REASONS[withheld.reason]
        : "no restored key had it (a new autotune key: the kernel, its configs or its tuning key changed)",
    });
  }
  return out;
}
