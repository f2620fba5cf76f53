import type { JobContext } from "../../cache/job-context.js";
import { readPlan } from "../../cache/plan/plan-store.js";
import { IntegrityError, StoreError } from "../../errors.js";

/** What a GPU job got from the CPU prewarm of the key it restored (RunReport.cpuPrewarm). */
export interface AheadReport {
  /** The key the CPU prewarm built on, and the revision it compiled. */
  base: string;
  revision: string;
  /** Kernels the CPU prewarm compiled ahead, and how many of them this job loaded. */
  compiledAhead: number;
  loadedAhead: number;
  /** Kernels this job still compiled, by why. */
  stillCompiled: number;
  why: { leftByPrewarm: number; notInPlan: number };
  /** The kernels the CPU prewarm left to this job, with why (its first few). */
  left: { name: string; why: string }[];
}

/**
 * Compares a GPU job's kernel loads and compiles (the hook's lines, by cache key) with what the CPU
 * prewarm of the restored key compiled ahead. Null when the restored key had no CPU prewarm.
 */
export async function aheadReport(
  ctx: JobContext,
  restored: { matchedKey: string | null; matchedScope: string | null } | null,
  kernels: { loaded: Set<string>; compiled: Map<string, string> },
): Promise<AheadReport | null> {
  if (!restored?.matchedKey || !restored.matchedScope) return null;
  let prewarmed: NonNullable<Awaited<ReturnType<typeof readPlan>>>["prewarmed"];
  try {
    prewarmed = (await readPlan(ctx.store, restored.matchedScope, restored.matchedKey))?.prewarmed;
  } catch (e) {
    if (!(e instanceof IntegrityError || e instanceof StoreError)) throw e;
    ctx.log.warn(`${e.message}; the report says nothing of a CPU prewarm`);
    return null;
  }
  if (!prewarmed) return null;
  const ahead = new Set(prewarmed.compiled);
  const leftNames = new Set(prewarmed.failed.map((f) => f.name.split(" ")[0]?.split(".").pop()));
  let leftByPrewarm = 0;
  for (const name of kernels.compiled.values()) if (leftNames.has(name)) leftByPrewarm++;
  const report: AheadReport = {
    base: prewarmed.base,
    revision: prewarmed.revision,
    compiledAhead: ahead.size,
    loadedAhead: [...kernels.loaded].filter((h) => ahead.has(h)).length,
    stillCompiled: kernels.compiled.size,
    why: { leftByPrewarm, notInPlan: kernels.compiled.size - leftByPrewarm },
    left: prewarmed.failed.slice(0, 10),
  };
  ctx.log.info(aheadLine(report));
  return report;
}

/** The report's line: what the CPU prewarm compiled ahead, what the job loaded of it and still compiled. */
export function aheadLine(r: AheadReport): string {
  const still = r.stillCompiled
    ? `; ${r.stillCompiled} still compiled here (${r.why.leftByPrewarm} the CPU prewarm left to the GPU job, ${r.why.notInPlan} not in the plan: specializations or kernels the base job never ran)`
    : "; 0 compiled here";
  return `CPU prewarm (on ${r.base}): ${r.compiledAhead} kernels compiled ahead, ${r.loadedAhead} of them loaded by this job${still}`;
}
