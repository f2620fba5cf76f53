import type { Manifest } from "../../manifest/manifest.js";
import { autotuneVerdict, type WithheldReason } from "../autotune/policy.js";
import { saltHolds } from "../autotune/salt.js";
import type { JobContext } from "../job-context.js";
import type { FramedRef } from "./lazy-plan.js";

/**
 * An entry a lazy restore left in the store, as the local state keeps it for the job's lookups
 * (cache/lazy/entry-fetcher.ts) and for the save (which carries it over from the parent key): where
 * its frames lie, and what verifies it. `withhold`: why the profile's autotune policy would take it
 * out of the job's folder were it an autotune result (an on-demand lookup of one is refused).
 */
export interface DeferredEntry {
  object: string;
  frame: [number, number];
  sha256: string;
  size: number;
  files: number;
  withhold?: WithheldReason;
}

/** cache -> entry name -> where to fetch it. */
export type DeferredEntries = Record<string, Record<string, DeferredEntry>>;

/** The records of a lazy restore's deferred entries of one key. */
export function deferredEntries(
  ctx: JobContext,
  m: Manifest,
  refs: FramedRef[],
  into: DeferredEntries,
): void {
  for (const r of refs) {
    const object = m.packs[r.pack]?.object;
    if (!object) continue;
    const tuning = m.tunings?.find((t) => t.id === r.tunedBy);
    const withhold = autotuneVerdict(ctx.autotune, tuning, saltHolds(ctx.autotune.workdir, r.salt));
    const cache = into[r.cache] ?? {};
    cache[r.name] ??= {
      object,
      frame: r.frame,
      sha256: r.sha256,
      size: r.size,
      files: r.files,
      ...(withhold ? { withhold } : {}),
    };
    into[r.cache] = cache;
  }
}

/** How many entries, and bytes, `d` holds. */
export function deferredTally(d: DeferredEntries): { entries: number; bytes: number } {
  let entries = 0;
  let bytes = 0;
  for (const cache of Object.values(d))
    for (const e of Object.values(cache)) {
      entries++;
      bytes += e.size;
    }
  return { entries, bytes };
}
