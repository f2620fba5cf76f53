import { prune } from "../../cache/prune.js";
import { parseDuration, parseSize } from "../../config/durations.js";
import { hostEnvironment } from "../../environment.js";
import { UsageError } from "../../errors.js";
import { formatBytes } from "../../format.js";
import { openStore } from "../../store/open.js";
import type { GlobalOptions } from "../options.js";
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
    openStore(config, hostEnvironment()),
    {
      keep,
      olderThanMs: o.olderThan ? duration(o.olderThan, "--older-than") : undefined,
      maxBytes: o.maxSize ? size(o.maxSize, "--max-size") : undefined,
      graceMs: duration(o.grace, "--grace"),
      dryRun: o.dryRun,
    },
    log,
  );
  if (o.json) {
    printJson(report);
    return;
  }
  const verb = report.dryRun ? "would delete" : "deleted";
  if (keep === undefined && !o.olderThan && !o.maxSize)
    log.info(
      "no policy given (--keep, --older-than or --max-size): no key is deleted, only packs no key uses and leftovers of killed saves",
    );
  for (const m of report.manifestsDeleted) log.info(`${verb} ${m.scope} ${m.key}: ${m.reason}`);
  log.info(
    `${verb} ${report.manifestsDeleted.length} keys and ${report.packsDeleted.length} packs (${formatBytes(report.bytesFreed)}); kept ${report.manifestsKept} keys (${formatBytes(report.bytesKept)})`,
  );
  if (report.packsSpared)
    log.info(`spared ${report.packsSpared} unreferenced packs that a save in flight is using`);
  if (report.temporaryReaped)
    log.info(`removed ${report.temporaryReaped} temporary files left by killed saves`);
}

function duration(text: string, flag: string): number {
  const ms = parseDuration(text);
  if (ms === null)
    throw new UsageError(`${flag} ${text}: use a number and a unit, like 90s, 30m, 12h, 7d or 2w`);
  return ms;
}

function size(text: string, flag: string): number {
  const bytes = parseSize(text);
  if (bytes === null) throw new UsageError(`${flag} ${text}: use a size like 500MB, 10GB or 2GiB`);
  return bytes;
}
