import { inLanes } from "../../bounded-lanes.js";
import type { Manifest } from "../../manifest/manifest.js";
import type { RestoreTarget } from "../../pack/pack-request.js";
import { frameRuns, readFramed } from "../../pack/read/framed-reader.js";
import type { JobContext } from "../job-context.js";
import type { PackOutcome } from "../restore/restore-packs.js";
import type { FramedRef } from "./lazy-plan.js";

/** Ranged reads at once: each is small (a run of entries), so latency, not bandwidth, bounds them. */
const RANGE_LANES = 8;

/**
 * Places a lazy restore's prefetch set before the job: per pack, one ranged read per run of entries
 * whose frames follow each other (frameRuns), so only the bytes of the entries wanted are read.
 */
export async function prefetchFramed(
  ctx: JobContext,
  manifest: Manifest,
  refs: FramedRef[],
  targets: Map<string, RestoreTarget>,
): Promise<PackOutcome[]> {
  const byPack = new Map<number, FramedRef[]>();
  for (const r of refs) byPack.set(r.pack, [...(byPack.get(r.pack) ?? []), r]);
  const runs = [...byPack].flatMap(([pack, list]) => frameRuns(list).map((run) => ({ pack, run })));
  const out: PackOutcome[] = [];
  await inLanes(runs, RANGE_LANES, async ({ pack, run }) => {
    const object = manifest.packs[pack]?.object as string;
    const result = await readFramed({ store: ctx.store, object, run, targets, zstd: ctx.runtime.zstd });
    out.push({ refs: run, result });
  });
  return out;
}
