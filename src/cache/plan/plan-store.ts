import { Readable } from "node:stream";
import { IntegrityError, StoreError } from "../../errors.js";
import { planObject } from "../../store/layout.js";
import type { Store } from "../../store/store.js";
import type { JobContext } from "../job-context.js";
import type { Match } from "../lookup.js";
import {
  decodePlan,
  encodePlan,
  MAX_PLAN_BYTES,
  mergedEntries,
  PLAN_FORMAT,
  type Plan,
  type Prewarmed,
  type RecordedPlan,
} from "./plan.js";

/** A key's stored plan; null when it has none. A damaged plan throws IntegrityError (decodePlan says why). */
export async function readPlan(store: Store, scope: string, key: string): Promise<Plan | null> {
  const object = planObject(scope, key);
  const data = await store.read(object, MAX_PLAN_BYTES);
  return data ? decodePlan(data, object) : null;
}

/** The parent's plan for a save to build on; a damaged or unreadable one is left out, with a line saying so. */
async function parentPlan(ctx: JobContext, parent: Match | null): Promise<Plan | null> {
  if (!parent) return null;
  try {
    return await readPlan(ctx.store, parent.scope, parent.key);
  } catch (e) {
    if (!(e instanceof IntegrityError || e instanceof StoreError)) throw e;
    ctx.log.warn(`${e.message}; this key's plan leaves the parent's out`);
    return null;
  }
}

/**
 * Writes the key's plan after its manifest: what this job's hook recorded, with what the parent's plan
 * holds beside it. A store that fails it costs only the plan (a later CPU prewarm finds none): a warning.
 */
export async function savePlan(
  ctx: JobContext,
  scope: string,
  parent: Match | null,
  recorded: RecordedPlan | undefined,
  prewarmed?: Prewarmed,
): Promise<number | null> {
  if (!recorded || (recorded.entries.length === 0 && !prewarmed)) return null;
  const base = await parentPlan(ctx, parent);
  const plan: Plan = {
    format: PLAN_FORMAT,
    key: ctx.key,
    scope,
    revision: ctx.revision,
    createdAt: new Date().toISOString(),
    device: recorded.device?.torch ? recorded.device : (base?.device ?? recorded.device),
    entries: mergedEntries(recorded.entries, base?.entries ?? []),
    ...(prewarmed ? { prewarmed } : {}),
  };
  const body = encodePlan(plan);
  try {
    await ctx.store.put(planObject(scope, ctx.key), Readable.from([body]), body.length);
  } catch (e) {
    if (!(e instanceof StoreError) || ctx.strict.fails("store-unavailable")) throw e;
    ctx.log.warn(`the compile plan of ${ctx.key} was not saved (${e.message}); a CPU prewarm will find none`);
    return null;
  }
  const left = [
    recorded.outside.length ? `${recorded.outside.length} outside the checkout left out` : "",
    recorded.unplannable.length
      ? `${recorded.unplannable.length} not recordable (${recorded.unplannable[0]})`
      : "",
  ].filter(Boolean);
  ctx.log.info(
    `compile plan: ${plan.entries.length} kernels (${recorded.entries.length} recorded by this job${base ? `, the rest from ${base.key}` : ""})${left.length ? `; ${left.join("; ")}` : ""}`,
  );
  return plan.entries.length;
}
