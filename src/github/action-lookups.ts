import * as core from "@actions/core";
import type { JobContext } from "../cache/job-context.js";
import { type LazyReport, type LookupEnv, lazyLine } from "../cache/lazy/job-lookups.js";
import { startLookupDaemon, stopLookupDaemon } from "../cache/lazy/lookup-daemon.js";
import type { RestoreReport } from "../cache/restore/restore-report.js";
import type { Log } from "../log.js";
import { hookFirstOn } from "../telemetry/hook.js";

/** The variable that tells a step the job's lookups are served, and where (set by the restore step). */
const SOCKET: keyof LookupEnv = "KCACHE_LAZY_SOCKET";

/**
 * Whether this restore step is to serve the job's lookups: a cache restores lazily or the store
 * shares live, nothing is served yet (one restore step of a job serves them), and it downloads.
 */
export function servesLookups(ctx: JobContext, lookupOnly: boolean): boolean {
  return !lookupOnly && !process.env[SOCKET] && (ctx.live || ctx.caches.some((c) => c.lazy));
}

/**
 * After the action's restore, for every job: kcache's hook goes first on PYTHONPATH for the job's
 * later steps, and writes to the telemetry file the restore made for the job (KCACHE_TELEMETRY_FILE):
 * which entries the job's processes looked up and wrote, each file with the digest of what was
 * written. The save step reads it: its record of use, and on a folder other jobs may write, the only
 * way it attributes a new entry to this job (cache/save/save-attribution.ts).
 */
export function installHook(telemetry: string | null, log: Log): void {
  try {
    core.exportVariable("PYTHONPATH", hookFirstOn(process.env.PYTHONPATH));
  } catch (e) {
    log.warn(`kcache's hook is not installed for the job's steps (${(e as Error).message})`);
    return;
  }
  if (!telemetry) return;
  core.exportVariable("KCACHE_TELEMETRY_FILE", telemetry);
  log.info(
    `later steps have kcache's hook on PYTHONPATH (a step that sets PYTHONPATH keeps $PYTHONPATH in it), recording what the job's Triton processes load and write in ${telemetry}`,
  );
}

/**
 * After the action's restore: a process of its own serves the job's lookups until the save step
 * (the steps between are processes kcache never sees), and later steps get kcache's hook on
 * PYTHONPATH with the socket's variables. Not started, the job compiles what was left in the store,
 * and the save keeps those entries.
 */
export async function startLookups(restored: RestoreReport, log: Log): Promise<void> {
  let env: LookupEnv | null;
  let pythonPath: string;
  try {
    pythonPath = hookFirstOn(process.env.PYTHONPATH);
    env = await startLookupDaemon(process.argv[1] as string, restored.lazy?.prefetched ?? 0, process.env);
  } catch (e) {
    log.warn(
      `the job's lookups are not served (${(e as Error).message}): it compiles the entries the lazy restore left in the store, and the save keeps them`,
    );
    return;
  }
  if (!env) return;
  core.exportVariable("PYTHONPATH", pythonPath);
  for (const [name, value] of Object.entries(env)) core.exportVariable(name, value);
  const left = restored.lazy?.deferred ?? 0;
  log.info(
    `serving the job's lookups until the save step (${left} entries left in the store${env.KCACHE_LIVE ? "; kernels the job compiles are shared live" : ""}): later steps have kcache's hook on PYTHONPATH`,
  );
}

/**
 * In the step that saves: stops the lookups the restore step started, after which the local state
 * says which entries came from other jobs live. What they came to, or null when none were served.
 */
export async function stopLookups(log: Log): Promise<LazyReport | null> {
  const socket = process.env[SOCKET];
  if (!socket) return null;
  // Later steps (after a save step in the middle of a job) no longer ask.
  core.exportVariable(SOCKET, "");
  // Stopping shares what the job completed last: each upload bounded by the store's idle timeout.
  const waitSeconds = Number(process.env.KCACHE_LAZY_WAIT) || 35;
  const r = await stopLookupDaemon(socket, (2 * waitSeconds + 10) * 1000);
  if (!r) {
    log.warn(
      "the job's lookup service did not answer when asked to stop: its counts are not in this report, and entries it had yet to share live are not shared",
    );
    return null;
  }
  for (const w of r.warnings) log.warn(w);
  log.info(lazyLine(r.lazy));
  return r.lazy;
}
