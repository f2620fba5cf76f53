import type { Fault } from "../../cache/faults.js";
import { save } from "../../cache/save.js";
import { usageSummary } from "../../cache/save-usage.js";
import { tolerateCacheFailure } from "../../cache/tolerate.js";
import { formatBytes, formatSeconds } from "../../format.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, printJson } from "../setup.js";

export async function saveCommand(o: GlobalOptions & { evict?: boolean }) {
  const { ctx } = await commandJob(o);
  const { log } = ctx;
  const faults: Fault[] = [];
  const report = await tolerateCacheFailure(
    "save",
    ctx.strict,
    log,
    () => save(ctx, o.evict === false ? { evict: { never: "--no-evict" } } : {}),
    faults,
  );
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
    ].filter(Boolean);
    if (skipped.length) log.info(`not saved: ${skipped.join(", ")}`);
  }
  if (o.json)
    printJson(
      report ?? { primaryKey: ctx.key, outcome: "failed", faults, error: log.warnings.at(-1) ?? null },
    );
}
