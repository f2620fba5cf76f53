import { fault, StrictFaultError } from "../../cache/faults.js";
import type { JobContext } from "../../cache/job-context.js";
import { type Match, searchSteps } from "../../cache/lookup.js";
import type { Plan } from "../../cache/plan/plan.js";
import { readPlan } from "../../cache/plan/plan-store.js";
import { IntegrityError } from "../../errors.js";
import { primaryKey, stackPrefix } from "../../keys/key.js";
import { manifestListPrefix, parseManifestObject } from "../../store/layout.js";

/**
 * Stack parts only a machine with the accelerator can probe: a CPU runner lacks them and is otherwise
 * the GPU job's stack (the same Python, torch and Triton installed).
 */
export const ACCELERATOR_PARTS = new Set(["cuda-arch"]);

/** Why the GPU job's stack is not this machine's but for its accelerator; null when it is. */
export function stackMismatch(cpu: Record<string, string>, gpu: Record<string, string>): string | null {
  for (const [k, v] of Object.entries(gpu)) {
    if (k in cpu) {
      if (cpu[k] !== v) return `${k} is ${cpu[k]} here, ${v} on the GPU job's machine`;
    } else if (!ACCELERATOR_PARTS.has(k)) return `${k}=${v} on the GPU job's machine, absent here`;
  }
  for (const k of Object.keys(cpu))
    if (!(k in gpu)) return `${k}=${cpu[k]} here, absent on the GPU job's machine`;
  return null;
}

/** The job as the GPU job's stack keys it: its stack id in the key, its components recorded. */
export function onStack(ctx: JobContext, stackId: string, components: Record<string, string>): JobContext {
  return {
    ...ctx,
    stack: { stackId, components },
    key: primaryKey(ctx.prefix, stackId, ctx.revision),
    stackKeyPrefix: stackPrefix(ctx.prefix, stackId),
  };
}

export interface GpuBase {
  match: Match;
  plan: Plan;
  /** The job as the GPU job's stack keys it. */
  ctx: JobContext;
}

/** How many manifests the search reads at most before it gives up. */
const MAX_CANDIDATES = 64;

/**
 * The newest key of this workload, in the scopes this job reads (its own first), saved on a stack
 * that is this machine's but for the accelerator, and holding a compile plan. None, with the reasons
 * for the candidates it passed over, when there is none; `refused` when the newest one's plan was
 * refused (a warning, and nothing compiled; with --strict, exit 3).
 */
export async function findGpuBase(ctx: JobContext): Promise<GpuBase | { none: string[]; refused?: string }> {
  const passed: string[] = [];
  let read = 0;
  for (const scope of ctx.scopes.read) {
    const listed = await ctx.store.list(manifestListPrefix(scope, `${ctx.prefix}-`));
    for (const o of listed) {
      if (read >= MAX_CANDIDATES) return { none: [...passed, `stopped after ${MAX_CANDIDATES} keys`] };
      const where = parseManifestObject(o.name);
      if (!where) continue;
      read++;
      const step = [{ scope, match: "exact" as const, value: where.key }];
      const match = await searchSteps(ctx.store, step, ctx.key, ctx.log);
      if (!match) continue;
      // The listing's prefix `ops-` also lists another workload's `ops-big-…`: only this prefix's keys.
      if (!match.key.startsWith(stackPrefix(ctx.prefix, match.manifest.stackId))) continue;
      const why = stackMismatch(ctx.stack.components, match.manifest.stack);
      if (why) {
        passed.push(`${match.key}: ${why}`);
        continue;
      }
      let plan: Plan | null;
      try {
        plan = await readPlan(ctx.store, match.scope, match.key);
      } catch (e) {
        if (!(e instanceof IntegrityError)) throw e;
        // Refused whole, and no older key's plan taken in its place: the store is not what it was.
        const message = `${e.message}. Nothing was compiled.`;
        if (ctx.strict.fails("plan-refused"))
          throw new StrictFaultError(message, fault("plan-refused", message));
        return { none: passed, refused: message };
      }
      if (!plan) {
        passed.push(
          `${match.key}: no compile plan (saved by a job without kcache's hook in, or by an older kcache)`,
        );
        continue;
      }
      return { match, plan, ctx: onStack(ctx, match.manifest.stackId, match.manifest.stack) };
    }
  }
  return { none: passed };
}
