import fs from "node:fs";
import path from "node:path";
import { KCACHE_PRIVATE_PREFIX } from "../../kinds/kind.js";
import { makeFolders } from "../../make-folders.js";
import { type OwnerRule, ownedName, ownerGone } from "../../pack/read/staging-owner.js";

/**
 * Which jobs are using a persistent cache folder now, and which untrusted jobs used it lately. A
 * restore leaves a marker in the folder, `.kcache-live-<where>-<pid>-<random>`, named for the process
 * that lasts as long as the job (process/job-anchor.ts) and holding when the job began, whether it
 * works in a folder of its own, and whether its scope is trusted. The end of a trusted job removes
 * its marker; the end of an untrusted job (a pull request's, a build kcache could not place) writes
 * when it ended and keeps it for UNTRUSTED_KEPT_MS: a trusted job whose folder was fresh (empty) at
 * its restore, and so counted as its own, learns at its save that the folder was shared after all
 * (save/save-attribution.ts). Markers are the runner's honest record, never proof: a process can
 * delete or rewrite one, so a save on a folder that held entries attributes nothing by them (only by
 * the hook's record of what its own processes wrote). A marker whose process is
 * gone (a job killed with kill -9, a runner restarted) is stale, and so is one of another container
 * or host left untouched for a day: a trim then no longer spares what that job might read, and an
 * untrusted job's marker counts it as having ended when that was noticed.
 */
export const LIVE_JOB: OwnerRule = { prefix: `${KCACHE_PRIVATE_PREFIX}live-`, foreignMs: 24 * 3600_000 };

/** How long an ended untrusted job's marker stays: longer than any job that ran beside it. */
export const UNTRUSTED_KEPT_MS = 3 * 24 * 3600_000;

export interface LiveJob {
  /** The marker's file name in the folder. */
  marker: string;
  startedAt: number;
  /** The job reads a folder of its own (isolate), linked from this one: trimming this one cannot take an entry from under it. */
  isolated: boolean;
  /** The job writes a trusted scope (a branch's or tag's); false for a marker that does not say. */
  trusted: boolean;
  /** When the job ended (kept only for untrusted jobs); null while it runs. */
  endedAt: number | null;
}

export interface JobMark {
  isolated: boolean;
  trusted: boolean;
}

/** Marks a job as using `root` from now on; returns the marker's name. */
export function markJob(root: string, pid: number, mark: JobMark, now = Date.now()): string {
  makeFolders(root);
  const marker = ownedName(LIVE_JOB.prefix, pid);
  writeMarker(root, marker, {
    startedAt: now,
    isolated: mark.isolated,
    trusted: mark.trusted,
    endedAt: null,
  });
  return marker;
}

/**
 * The job behind `marker` ended: a trusted job's marker goes; an untrusted job's stays, saying when
 * it ended, for the saves of trusted jobs that ran beside it. A marker already gone is fine.
 */
export function unmarkJob(root: string, marker: string, now = Date.now()): void {
  if (!marker.startsWith(LIVE_JOB.prefix)) return;
  const file = path.join(root, marker);
  if (!fs.existsSync(file)) return;
  const job = readMarker(root, marker);
  if (job.trusted) fs.rmSync(file, { force: true });
  else writeMarker(root, marker, { ...job, endedAt: now });
}

/** The jobs using `root` now, other than `except`; stale markers are settled on the way. */
export function liveJobs(root: string, except?: string, now = Date.now()): LiveJob[] {
  return jobsOf(root, except, now).filter((j) => j.endedAt === null);
}

/** The untrusted jobs that used `root` at some time in [from, now], running or ended, other than `except`. */
export function untrustedJobsSince(root: string, from: number, except?: string, now = Date.now()): LiveJob[] {
  return jobsOf(root, except, now).filter((j) => !j.trusted && (j.endedAt ?? now) >= from);
}

/**
 * Every marker in `root` but `except`, read; on the way a stale trusted marker is removed, a stale
 * untrusted one is marked ended now, and an untrusted one that ended over UNTRUSTED_KEPT_MS ago goes.
 */
function jobsOf(root: string, except: string | undefined, now: number): LiveJob[] {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return [];
  }
  const out: LiveJob[] = [];
  for (const marker of names) {
    if (!marker.startsWith(LIVE_JOB.prefix) || marker.endsWith(".tmp") || marker === except) continue;
    let job = readMarker(root, marker);
    if (job.endedAt === null && ownerGone(root, marker, LIVE_JOB, now)) {
      if (job.trusted) {
        fs.rmSync(path.join(root, marker), { force: true });
        continue;
      }
      job = { ...job, endedAt: now };
      writeMarker(root, marker, job);
    }
    if (job.endedAt !== null && now - job.endedAt > UNTRUSTED_KEPT_MS) {
      fs.rmSync(path.join(root, marker), { force: true });
      continue;
    }
    out.push(job);
  }
  return out;
}

/** Writes a marker whole (temp + rename): a reader never sees half of one. */
function writeMarker(root: string, marker: string, job: Omit<LiveJob, "marker">): void {
  const file = path.join(root, marker);
  const tmp = `${file}.tmp`;
  try {
    fs.writeFileSync(tmp, JSON.stringify(job));
    fs.renameSync(tmp, file);
  } catch {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * A marker's record. One that cannot be read counts as the safe reading: an untrusted job that began
 * when the marker was written, reads this folder and still runs (a marker being written this very
 * moment, or damaged); one of a kcache from before markers said their trust counts as untrusted.
 */
function readMarker(root: string, marker: string): LiveJob {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(root, marker), "utf8")) as Partial<LiveJob>;
    const time = (t: unknown) => (typeof t === "number" && Number.isFinite(t) ? t : null);
    const startedAt = time(v.startedAt);
    if (startedAt !== null)
      return {
        marker,
        startedAt,
        isolated: v.isolated === true,
        trusted: v.trusted === true,
        endedAt: time(v.endedAt),
      };
  } catch {
    // written by another kcache this very moment, or damaged: the safe reading below
  }
  let written = Date.now();
  try {
    written = fs.statSync(path.join(root, marker)).mtimeMs;
  } catch {
    // gone this moment: the reading below is only used until the next look
  }
  return { marker, startedAt: written, isolated: false, trusted: false, endedAt: null };
}
