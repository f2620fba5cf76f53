import type { Fault } from "../../cache/faults.js";
import { readState } from "../../cache/local-state.js";
import { usageSummary } from "../../cache/usage/save-usage.js";
import { formatBytes, formatSeconds } from "../../format.js";
import { dropInSave } from "../../pipeline/drop-in-save.js";
import { settleStage } from "../../pipeline/stages/settle-stage.js";
import { readOnlyLine } from "../../store/read-only.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, failedAsJson, printJson } from "../setup.js";

export async function saveCommand(o: GlobalOptions & { evict?: boolean; readOnly?: boolean }) {
  const { ctx } = await commandJob(o);
  const { log } = ctx;
  if (o.readOnly) ctx.readOnly.enter("--read-only");
  const faults: Fault[] = [];
  // Read once: the save and the end of the job both go by how the job's restore left it.
  const state = readState(ctx.stateFile);
  const opts = o.evict === false ? { evict: { never: "--no-evict" as const } } : {};
  // Read-only (store/read-only.ts): one line where the save would begin, and nothing written.
  const readOnly = ctx.readOnly.why;
  if (readOnly !== null) log.info(readOnlyLine(readOnly));
  const report =
    readOnly === null
      ? await failedAsJson(o.json, { primaryKey: ctx.key, outcome: "failed", faults }, () =>
          dropInSave(ctx, opts, faults, state),
        )
      : null;
  if (report) {
    log.info(`${report.message} (${report.store})`);
    if (report.outcome === "saved") {
      log.info(
        `uploaded ${formatBytes(report.bytesUploaded)} in ${report.packsWritten} pack(s)${report.consolidated ? " (consolidated)" : ""}; ${report.entries} entries in the key; ${formatSeconds(report.seconds)}`,
      );
    }
    if (report.outcome === "saved" || report.outcome === "nothing-new")
      log.info(usageSummary(report.usage, { runs: ctx.save.keepUnusedRuns, days: ctx.save.keepUnusedDays }));
    const s = report.skipped;
    const skipped = [
      s.incomplete && `${s.incomplete} incomplete entries`,
      s.tempDirs && `${s.tempDirs} temp folders`,
      s.lockFiles && `${s.lockFiles} lock files`,
      s.localFiles && `${s.localFiles} precompiled headers (rebuilt on the machine that uses them)`,
      s.otherFiles && `${s.otherFiles} other files`,
      s.vanished && `${s.vanished} entries that vanished while saving`,
      s.notRelocatable &&
        `${s.notRelocatable} entries that could not be stored without their folder (the warning above)`,
    ].filter(Boolean);
    if (skipped.length) log.info(`not saved: ${skipped.join(", ")}`);
    const unverified = report.leftOut.unverified;
    if (unverified.entries)
      log.info(
        `left out ${unverified.entries} local entries (${formatBytes(unverified.bytes)}): in the folder before the job and in no key it restored, so nothing vouches for them (trust-local: true uploads them on a runner that only runs the default branch)`,
      );
  }
  // Run after the job passed (the README's rule): its own folders merge back in a trusted scope.
  const folders = await settleStage(ctx, { passed: true }, state);
  if (o.json)
    printJson(
      report
        ? { ...report, folders }
        : ctx.readOnly.why !== null
          ? { primaryKey: ctx.key, outcome: "read-only", readOnly: ctx.readOnly.why, faults, folders }
          : { primaryKey: ctx.key, outcome: "failed", faults, folders, error: log.warnings.at(-1) ?? null },
    );
}
