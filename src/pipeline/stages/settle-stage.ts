import type { JobContext } from "../../cache/job-context.js";
import type { LocalState } from "../../cache/local-state.js";
import { type JobEnd, type SettledFolder, settleFolders } from "../../cache/persistent/settle.js";

/**
 * After the save: the job's own folders merged back (a trusted job that passed) or discarded, its
 * use recorded, and folders with max-size trimmed. Local only; a failure here warns, as a store
 * failure does: the job's result stands.
 */
export async function settleStage(
  ctx: JobContext,
  end: JobEnd,
  state?: LocalState | null,
): Promise<SettledFolder[]> {
  try {
    return await settleFolders(ctx, end, state);
  } catch (e) {
    ctx.log.warn(`settling the cache folders after the job failed: ${(e as Error).message}`);
    return [];
  }
}
