import { prune } from "../../cache/prune.js";
import { UsageError } from "../../errors.js";
import { formatBytes } from "../../report/format.js";
import { openStore } from "../../store/open.js";
import { parseDuration, parseSize } from "../durations.js";
import type { GlobalOptions } from "../main.js";
import { commandBasics, printJson } from "../setup.js";

export async function pruneCommand(
  o: GlobalOptions & { keep?: string; olderThan?: string; maxSize?: string; grace: string; dryRun?: boolean },
) {
  const { config, log } = commandBasics(o);
  let keep: number | undefined;
  if (o.keep !== undefined) {
    keep = Number(o.keep);
    if (!Number.isInteger(keep) || keep < 0) throw new UsageError(`--keep ${o.keep}: give a whole number`);
  }
  const report = await prune(
    openStore(config),
    {
      keep,
      olderThanMs: o.olderThan ? parseDuration(o.olderThan, "--older-than") : undefined,
      maxBytes: o.maxSize ? parseSize(o.maxSize, "--max-size") : undefined,
      graceMs: parseDuration(o.grace, "--grace"),
      dryRun: o.dryRun,
    },
    log,
  );
  if (o.json) {
    printJson(report);
    return;
  }
  const verb = report.dryRun ? "would delete" : "deleted";
  for (const m of report.manifestsDeleted) log.info(`${verb} ${m.scope} ${m.key}: ${m.reason}`);
  log.info(
    `${verb} ${report.manifestsDeleted.length} keys and ${report.packsDeleted.length} packs (${formatBytes(report.bytesFreed)}); kept ${report.manifestsKept} keys (${formatBytes(report.bytesKept)})`,
  );
}
