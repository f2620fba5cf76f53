import { prune } from "../../cache/usage/prune.js";
import { hostEnvironment } from "../../environment.js";
import { UsageError } from "../../errors.js";
import { formatBytes } from "../../format.js";
import { declaredReadOnly, openStore } from "../../store/open.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, durationOption, printJson, sizeOption } from "../setup.js";

export async function pruneCommand(
  o: GlobalOptions & {
    keep?: string;
    olderThan?: string;
    maxSize?: string;
    grace: string;
    dryRun?: boolean;
    readOnly?: boolean;
  },
) {
  const { config, log } = await commandBasics(o);
  const env = hostEnvironment();
  const readOnly = declaredReadOnly(config, env);
  if (o.readOnly) readOnly.enter("--read-only");
  // Read-only: what a prune would delete, said as by --dry-run; nothing deleted.
  if (readOnly.why !== null) log.info(`read-only (${readOnly.why}): nothing deleted, as --dry-run`);
  let keep: number | undefined;
  if (o.keep !== undefined) {
    keep = Number(o.keep);
    if (!Number.isInteger(keep) || keep < 0) throw new UsageError(`--keep ${o.keep}: give a whole number`);
  }
  const report = await prune(
    openStore(config, env, readOnly),
    {
      keep,
      olderThanMs: o.olderThan ? durationOption(o.olderThan, "--older-than") : undefined,
      maxBytes: o.maxSize ? sizeOption(o.maxSize, "--max-size") : undefined,
      graceMs: durationOption(o.grace, "--grace"),
      dryRun: o.dryRun || readOnly.why !== null,
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
