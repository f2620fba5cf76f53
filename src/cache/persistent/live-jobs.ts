import fs from "node:fs";
import path from "node:path";
import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { type OwnerRule, ownedName, ownerGone } from "../../pack/read/staging-owner.js";

/**
 * Which jobs are using a persistent cache folder now. A restore leaves a marker in the folder,
 * `.kcache-live-<where>-<pid>-<random>`, named for the process that lasts as long as the job
 * (process/job-anchor.ts) and holding when the job began and whether it works in a folder of its own;
 * the end of the job removes it. A marker whose process is gone (a job killed with kill -9, a runner
 * restarted) is stale, and so is one of another container or host left untouched for a day: a trim
 * then no longer spares what that job might read.
 */
export const LIVE_JOB: OwnerRule = { prefix: `${KCACHE_PRIVATE_PREFIX}live-`, foreignMs: 24 * 3600_000 };

export interface LiveJob {
  /** The marker's file name in the folder. */
  marker: string;
  startedAt: number;
  /** The job reads a folder of its own (isolate), linked from this one: trimming this one cannot take an entry from under it. */
  isolated: boolean;
}

/** Marks a job as using `root` from now on; returns the marker's name. */
export function markJob(root: string, pid: number, isolated: boolean, now = Date.now()): string {
  fs.mkdirSync(root, { recursive: true });
  const marker = ownedName(LIVE_JOB.prefix, pid);
  fs.writeFileSync(path.join(root, marker), JSON.stringify({ startedAt: now, isolated }));
  return marker;
}

/** Removes a job's marker (the job ended); a marker already gone is fine. */
export function unmarkJob(root: string, marker: string): void {
  if (marker.startsWith(LIVE_JOB.prefix)) fs.rmSync(path.join(root, marker), { force: true });
}

/** The jobs using `root` now, other than `except`; stale markers are removed on the way. */
export function liveJobs(root: string, except?: string, now = Date.now()): LiveJob[] {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return [];
  }
  const out: LiveJob[] = [];
  for (const marker of names) {
    if (!marker.startsWith(LIVE_JOB.prefix) || marker === except) continue;
    if (ownerGone(root, marker, LIVE_JOB, now)) {
      fs.rmSync(path.join(root, marker), { force: true });
      continue;
    }
    out.push(readMarker(root, marker));
  }
  return out;
}

/** A marker's record; one that cannot be read counts as a job that began now and reads this folder. */
function readMarker(root: string, marker: string): LiveJob {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(root, marker), "utf8")) as Partial<LiveJob>;
    if (typeof v.startedAt === "number" && Number.isFinite(v.startedAt))
      return { marker, startedAt: v.startedAt, isolated: v.isolated === true };
  } catch {
    // written by another kcache this very moment, or damaged: the safe reading below
  }
  return { marker, startedAt: Date.now(), isolated: false };
}
