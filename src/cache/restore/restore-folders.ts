import type { CacheFolder, CacheKind, ScanResult } from "../../kinds/kind.js";
import type { JobContext } from "../job-context.js";
import { type LocalState, readState } from "../local-state.js";
import type { BuiltJobFolder } from "../persistent/job-folder.js";
import { lookAtFolder, openRunnerFolder } from "../persistent/runner-folder.js";

/**
 * The folders a job works in, made ready before anything is looked up, so that neither a store that
 * is down nor a miss changes what the job runs against (persistent/runner-folder.ts does each). A
 * lookup-only restore changes nothing: it only reads what the folders hold.
 */
export interface WorkingFolders {
  /** The caches as the job uses them: a job folder in place of the persistent one where isolated. */
  caches: CacheFolder[];
  /** cache name -> the job's own folder (isolate). */
  jobFolders: Record<string, string>;
  /** cache name -> how that folder was made. */
  built: Record<string, BuiltJobFolder>;
  /** cache name -> this job's marker in the persistent folder. */
  markers: Record<string, string>;
  startedAt: number;
  /** What each working folder held before the restore wrote anything (folders of a known kind). */
  scans: Map<string, { kind: CacheKind; scan: ScanResult }>;
  /** The local state as the restore found it: read once, here. */
  state: LocalState | null;
  /** cache name -> whether its runner's folder held anything when the restore began (persistent/shared-folder.ts). */
  held: Record<string, boolean>;
}

export async function prepareFolders(ctx: JobContext, lookupOnly: boolean): Promise<WorkingFolders> {
  const out: WorkingFolders = {
    caches: [],
    jobFolders: {},
    built: {},
    markers: {},
    startedAt: Date.now(),
    scans: new Map(),
    state: readState(ctx.stateFile),
    held: {},
  };
  for (const c of ctx.caches) {
    const f = lookupOnly ? await lookAtFolder(c) : await openRunnerFolder(ctx, c, out.startedAt);
    out.caches.push(f.cache);
    if (f.marker) out.markers[c.name] = f.marker;
    out.held[c.name] = f.heldAnything;
    if (f.built) {
      out.jobFolders[c.name] = f.built.path;
      out.built[c.name] = f.built;
    }
    if (f.kind && f.scan) out.scans.set(c.name, { kind: f.kind, scan: f.scan });
  }
  return out;
}
