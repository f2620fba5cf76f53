import type { Fault } from "../cache/faults.js";
import type { JobContext } from "../cache/job-context.js";
import type { LazyReport } from "../cache/lazy/job-lookups.js";
import { type LocalState, readState } from "../cache/local-state.js";
import { type SaveOptions, save } from "../cache/save/save.js";
import type { SaveReport } from "../cache/save/save-report.js";
import { tolerateCacheFailure } from "../cache/tolerate.js";
import { dropInRunRecord } from "../history/drop-in-record.js";
import { writeRunRecord } from "../history/run-record.js";

/**
 * The save of the drop-in path (`kcache save`, the action's save and post steps): the save, then a
 * run record of the job for `kcache stats`, with what this job's restore left in the local state.
 * A store that fails the save warns once and the job goes on (--strict: the save's rules); no record
 * is written then. A record the store refuses is one warning, and the job goes on. `state` is the
 * local state as the caller read it (once per command: the end of the job reads the same); `lazy`,
 * what the job's lookups came to when the restore step served them (github/action-lookups.ts).
 */
export async function dropInSave(
  ctx: JobContext,
  opts: SaveOptions = {},
  faults: Fault[] = [],
  state: LocalState | null = readState(ctx.stateFile),
  lazy: LazyReport | null = null,
): Promise<SaveReport | null> {
  const job = state?.primaryKey === ctx.key ? state.job : undefined;
  const report = await tolerateCacheFailure(
    "save",
    ctx.strict,
    ctx.log,
    () => save(ctx, opts, state),
    faults,
  );
  // A store that failed the save has had its one warning: no second try (and wait) for the record.
  if (report) await writeRunRecord(dropInRunRecord(ctx, job, report, lazy), ctx);
  return report;
}
