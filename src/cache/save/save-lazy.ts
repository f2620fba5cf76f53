import { formatBytes } from "../../format.js";
import { zstdEngine } from "../../pack/zstd/engines.js";
import type { JobContext } from "../job-context.js";
import type { UsagePlan } from "../usage/save-usage.js";
import type { LazySave } from "./save-groups.js";
import type { SavePlan } from "./save-plan.js";

/**
 * What a save knows of its lazily restored caches: which they are, whether this machine's engine can
 * write frames, and which entries the job used. Without an engine at all the save fails when it
 * packs (save-packs.ts), not here: a save with nothing to pack needs none.
 */
export async function lazySave(ctx: JobContext, usage: UsagePlan): Promise<LazySave> {
  const caches = new Set(ctx.caches.filter((c) => c.lazy).map((c) => c.name));
  let canFrame = false;
  if (caches.size)
    canFrame = await zstdEngine(ctx.runtime.zstd).then(
      (e) => e.chunks !== null,
      () => false,
    );
  const usedNow = new Set<string>();
  for (const [id, use] of usage.lastUsed) if (use === usage.now) usedNow.add(id);
  return { caches, canFrame, usedNow };
}

/** The lines a save says of its plan: a consolidation, and a lazy cache's entries packed again in frames. */
export function planLines(plan: SavePlan): string[] {
  const out: string[] = [];
  if (plan.consolidate)
    out.push(
      `consolidating: a chain of ${plan.chain} saves${plan.deadShare > 0 ? `, ${(plan.deadShare * 100).toFixed(0)}% dead bytes` : ""}${plan.keptLarge ? `; keeping ${plan.keptLarge} large pack(s)` : ""}`,
    );
  const r = plan.reframed;
  if (r)
    out.push(
      `restore: lazy: ${r.entries} entries (${formatBytes(r.bytes)}) packed again, each in frames of its own: their ${r.packs} pack(s) had none (written before the cache was lazy, or by an engine that cannot end frames), so every lazy restore read them whole; the next one reads only what jobs use`,
    );
  return out;
}
