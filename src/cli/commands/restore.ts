import type { Fault } from "../../cache/faults.js";
import type { JobContext } from "../../cache/job-context.js";
import { restoredContext } from "../../cache/local-state.js";
import { type RestoreReport, restore } from "../../cache/restore/restore.js";
import { tolerateCacheFailure } from "../../cache/tolerate.js";
import { hostEnvironment } from "../../environment.js";
import { CacheMissError } from "../../errors.js";
import { formatBytes, formatSeconds } from "../../format.js";
import { appendFileCommand } from "../../github/file-commands.js";
import type { Log } from "../../log.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, failedAsJson, printJson } from "../setup.js";

export async function restoreCommand(
  o: GlobalOptions & { lookupOnly?: boolean; failOnCacheMiss?: boolean; readOnly?: boolean },
) {
  const { ctx } = await commandJob(o);
  // A restore writes nothing to the store: read-only, it restores as ever.
  if (o.readOnly) ctx.readOnly.enter("--read-only");
  const { log } = ctx;
  log.info(`key ${ctx.key} (scope ${ctx.scopes.write})`);
  const faults: Fault[] = [];
  const report = await failedAsJson(o.json, { primaryKey: ctx.key, matchedKey: null, faults }, () =>
    tolerateCacheFailure(
      "restore",
      ctx.strict,
      log,
      () => restore(ctx, { lookupOnly: o.lookupOnly }),
      faults,
    ),
  );
  if (report) {
    if (!report.matchedKey) log.info(`cache miss: no saved key matched (${report.store})`);
    else if (report.lookupOnly) {
      log.info(
        `found ${report.matchedKey} in ${report.matchedScope}${report.cacheHit ? " (exact)" : ""} of ${report.store} (lookup only, nothing downloaded)`,
      );
    } else {
      log.info(
        `restored ${report.entriesRestored} entries${report.entriesPresent ? ` (${report.entriesPresent} more already present)` : ""} (${formatBytes(report.bytesRestored)}, ${formatBytes(report.bytesDownloaded)} read) from ${report.matchedKey}${report.cacheHit ? " (exact)" : ` (${report.matchedScope})`} of ${report.store} in ${formatSeconds(report.seconds)}${report.threads ? ` on ${report.threads} threads` : ""}`,
      );
      for (const c of report.caches) log.info(`  ${c.name}: ${c.entries} entries at ${c.path}`);
      log.info(restoredUsageLine(report.usage));
      if (report.entriesBad) log.info(`not written: ${report.entriesBad} entries (why: the warning above)`);
    }
  }
  exportJobFolders(restoredContext(ctx, report), ctx, log);
  if (o.json)
    printJson(
      report ?? { primaryKey: ctx.key, matchedKey: null, faults, error: log.warnings.at(-1) ?? null },
    );
  if (o.failOnCacheMiss && !report?.matchedKey) {
    throw new CacheMissError(`no saved key matched ${ctx.key} (--fail-on-cache-miss)`);
  }
}

/** What the restored key says about its working set, and whether this folder records reads. */
function restoredUsageLine(u: RestoreReport["usage"]): string {
  const reads =
    u.atime === null
      ? ""
      : u.atime
        ? "; reads are recorded here (access times)"
        : "; reads are not recorded here (noatime?): the save counts every entry as used unless the hook saw the job";
  return `  working set: ${u.live.entries} entries (${formatBytes(u.live.bytes)}) used at the key's save, ${u.unused.entries} (${formatBytes(u.unused.bytes)}) carried unused${reads}`;
}

/**
 * Under isolate the job works in folders of its own: later steps must find them through the caches'
 * variables. Under GitHub Actions they are written to $GITHUB_ENV; elsewhere the line to run is said.
 */
function exportJobFolders(work: JobContext, ctx: JobContext, log: Log): void {
  const env = hostEnvironment();
  for (const c of work.caches) {
    const home = ctx.caches.find((h) => h.name === c.name);
    if (!c.env || c.path === home?.path) continue;
    const set =
      !!env.GITHUB_ENV && appendFileCommand(env.GITHUB_ENV, `${c.env}=${c.path}\n`, "the job's variables");
    log.info(
      `${c.name}: the job's commands must use ${c.path}${set ? ` (${c.env} is set for the next steps)` : `: export ${c.env}=${c.path}`}`,
    );
  }
}
