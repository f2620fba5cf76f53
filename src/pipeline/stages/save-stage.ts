import type { Fault } from "../../cache/faults.js";
import type { JobContext } from "../../cache/job-context.js";
import type { LocalState } from "../../cache/local-state.js";
import { type SaveOptions, type SaveReport, save } from "../../cache/save/save.js";
import { tolerateCacheFailure } from "../../cache/tolerate.js";
import type { ProfileSpec } from "../../config/profile-schema.js";
import { readOnlyLine } from "../../store/read-only.js";
import type { Stage } from "../run-report.js";

/**
 * The run's last stage: save, only when the gate passed (`firstFailure` null) and neither the run
 * (--no-save) nor the profile (save: never) turned saving off, and the job is not read-only (one
 * line says so instead). A store failure warns.
 */
export async function saveStage(
  ctx: JobContext,
  profile: ProfileSpec,
  opts: { enabled: boolean; firstFailure: string | null; save: SaveOptions; state?: LocalState | null },
): Promise<{ saved: SaveReport | null; saveSkipped: string | null; faults: Fault[]; stage: Stage }> {
  let saved: SaveReport | null = null;
  let saveSkipped: string | null = null;
  const faults: Fault[] = [];
  const s0 = performance.now();
  // Read-only before the save began (declared); a write the store forbids during it is a fault, warned.
  const readOnly = ctx.readOnly.why;
  if (!opts.enabled) saveSkipped = "saving is off for this run (--no-save)";
  else if (profile.save === "never") saveSkipped = "saving is off for this profile (save: never)";
  else if (opts.firstFailure) saveSkipped = `not saved: ${opts.firstFailure} failed`;
  else if (readOnly !== null) {
    saveSkipped = readOnlyLine(readOnly);
    ctx.log.info(saveSkipped);
  } else {
    saved = await tolerateCacheFailure(
      "save",
      ctx.strict,
      ctx.log,
      () => save(ctx, opts.save, opts.state),
      faults,
    );
    if (saved) faults.push(...saved.faults);
    if (!saved) saveSkipped = "the store failed (warned)";
    else ctx.log.info(`${saved.message} (${saved.store})`);
  }
  const status: Stage["status"] = saved
    ? "ok"
    : opts.firstFailure || saveSkipped?.startsWith("saving is off") || readOnly !== null
      ? "skipped"
      : "warned";
  return {
    saved,
    saveSkipped,
    faults,
    stage: {
      name: "save",
      kind: "save",
      seconds: (performance.now() - s0) / 1000,
      status,
      summary: saved ? saved.outcome : (saveSkipped as string),
    },
  };
}
