import type { Fault } from "../../cache/faults.js";
import type { JobContext } from "../../cache/job-context.js";
import { type RestoreReport, restore } from "../../cache/restore/restore.js";
import { tolerateCacheFailure } from "../../cache/tolerate.js";
import type { Stage } from "../run-report.js";

/** The run's first stage: restore the caches (a store failure warns), or nothing on a cold run. */
export async function restoreStage(
  ctx: JobContext,
  enabled: boolean,
): Promise<{ restored: RestoreReport | null; faults: Fault[]; stage: Stage }> {
  if (!enabled)
    return {
      restored: null,
      faults: [],
      stage: {
        name: "restore",
        kind: "restore",
        seconds: 0,
        status: "skipped",
        summary: "cold run: nothing restored",
      },
    };
  const s0 = performance.now();
  const tolerated: Fault[] = [];
  const restored = await tolerateCacheFailure(
    "restore",
    ctx.strict,
    ctx.log,
    () => restore(ctx, { servesLookups: true }),
    tolerated,
  );
  return {
    restored,
    faults: restored ? restored.faults : tolerated,
    stage: {
      name: "restore",
      kind: "restore",
      seconds: (performance.now() - s0) / 1000,
      status: restored ? "ok" : "warned",
      summary: !restored
        ? "store failed (warned)"
        : restored.matchedKey
          ? `${restored.cacheHit ? "hit (exact)" : `partial (${restored.matchedKey})`}, ${restored.entriesRestored} entries from ${restored.store}`
          : `miss (${restored.store})`,
    },
  };
}
