import { formatBytes } from "../../format.js";
import { isTrustedScope } from "../../keys/scope.js";
import type { CacheFolder } from "../../kinds/kind.js";
import type { JobContext } from "../job-context.js";
import type { LocalState } from "../local-state.js";
import { type LiveJob, untrustedJobsSince } from "../persistent/live-jobs.js";
import type { HookUsage } from "../usage/save-usage.js";
import { hookUsedEntries } from "../usage/usage.js";
import type { Tally } from "../usage/working-set.js";
import { leaveOutUnverified, type Present, presentId } from "./save-scan.js";

/**
 * A file system's clock ticks coarser than Date.now(), and a marker is written a moment after its
 * job's first look at the folder: an entry made this close to an untrusted job's window counts as
 * made inside it.
 */
export const WINDOW_SLACK_MS = 2_000;

/** The untrusted jobs a save ran beside, as its report says them. */
export interface BesideUntrusted {
  /** Untrusted jobs live in the runner's folder at some time during this job. */
  jobs: number;
  /** How the save told its own entries from theirs: the hook's record of what this job wrote, or when entries were made. */
  by: "hook" | "time";
}

type Found = {
  kept: Present[];
  reused: Present[];
  ours: LocalState | null;
  roots: CacheFolder[];
  hook?: HookUsage;
};

/**
 * The entries a save may upload as its job's own: of those the parent key does not vouch for, neither
 * what the folder held before the job, unchanged (save-scan.ts), nor what an untrusted job beside it
 * may have made (below). A changed entry left out is already dropped from the parent's: its digest differs.
 */
export function jobsOwn(
  ctx: JobContext,
  found: Found,
  report: Parameters<typeof leaveOutUnverified>[2] & Parameters<typeof leaveOutOtherJobs>[2],
): Present[] {
  return leaveOutOtherJobs(ctx, { ...found, kept: leaveOutUnverified(ctx, found, report) }, report);
}

/**
 * Which of a trusted save's new and changed entries are its job's own, when untrusted jobs (a pull
 * request's, a build kcache could not place) used the same runner folder while it ran: two jobs on
 * one self-hosted runner folder without `isolate`, or a write through a hard link that an isolated
 * job shares with the runner's folder. The restore's record (`job.seen`) says what the folder held
 * when the job began; of what is new or changed since, an entry is the job's own when the hook saw
 * one of its processes write it (Triton's cache manager), or else when it was written (its files'
 * modification times) outside every untrusted job's time in the folder. That keeps honest
 * concurrency apart; a pull request's code that sets times back on purpose is kept out only by
 * `isolate` (docs/self-hosted.md).
 * The rest are left out of the key and counted in `report.leftOut.otherJobs`: the next job compiles
 * them again, and no pull request's kernel or autotune winner becomes the default branch's. A save
 * that no untrusted job ran beside keeps everything, as before.
 *
 * `roots`: the runner's folders, where the markers are (the job may work in a folder of its own).
 */
export function leaveOutOtherJobs(
  ctx: JobContext,
  found: {
    kept: Present[];
    reused: Present[];
    ours: LocalState | null;
    roots: CacheFolder[];
    hook?: HookUsage;
  },
  report: { leftOut: { otherJobs: Tally }; besideUntrusted: BesideUntrusted | null },
): Present[] {
  const { kept, reused, ours, roots, hook } = found;
  const job = ours?.job;
  if (!job || !isTrustedScope(ctx.scopes.write)) return kept;
  const now = Date.now();
  const beside = new Map<string, LiveJob[]>();
  for (const c of roots) {
    const jobs = untrustedJobsSince(c.path, job.startedAt - WINDOW_SLACK_MS, job.markers[c.name], now);
    if (jobs.length) beside.set(c.name, jobs);
  }
  if (beside.size === 0) return kept;
  const wrote = hook?.complete ? hookUsedEntries(ctx.caches, hook.wrote ?? []) : null;
  const vouched = new Set(reused);
  const out: Present[] = [];
  for (const p of kept) {
    const jobs = beside.get(p.cache);
    const before = job.seen[p.cache]?.[p.entry.name];
    // In the folder as it was when the job began, and unchanged: the restore's rules hold for it.
    const unchanged = before !== undefined && before === p.sig;
    // New entries appear only where the untrusted job compiled: the runner's folder itself, never
    // this job's own folder (isolate). A changed entry can come through a shared hard link from any.
    const mayBeTheirs =
      jobs?.filter((j) => before !== undefined || (!j.isolated && !job.folders[p.cache])) ?? [];
    if (vouched.has(p) || unchanged || mayBeTheirs.length === 0) {
      out.push(p);
      continue;
    }
    const ours =
      wrote && p.kind.lookupsSeenByHook ? wrote.has(presentId(p)) : !madeWhileLive(p, mayBeTheirs, now);
    if (ours) out.push(p);
    else {
      report.leftOut.otherJobs.entries++;
      report.leftOut.otherJobs.bytes += p.size;
    }
  }
  const jobs = new Set([...beside.values()].flat().map((j) => j.marker)).size;
  report.besideUntrusted = { jobs, by: wrote ? "hook" : "time" };
  const left = report.leftOut.otherJobs;
  if (left.entries)
    ctx.log.warn(
      `${jobs} untrusted job(s) (a pull request's, or a build kcache could not place) used ${[...beside.keys()].join(", ")} while this job ran: left out ${left.entries} entries (${formatBytes(left.bytes)}) that ${wrote ? "this job's processes did not write (the hook's record)" : "were made while one of them was live, without the hook (kcache run) to tell whose they are"}; they compile again in the next job. With isolate: true on the runner's caches, pull requests never share a folder with the default branch's jobs.`,
    );
  else
    ctx.log.info(
      `${jobs} untrusted job(s) used ${[...beside.keys()].join(", ")} while this job ran; every new entry is this job's own (${wrote ? "the hook's record" : "made outside their time"})`,
    );
  return out;
}

/**
 * Whether any file of the entry was written while one of `jobs` was in the folder, by its files'
 * modification times: what Triton's writes (a temp file renamed into place) and a write through a
 * link set, and what a restore's access-time stamps keep. Change times would not do: every restore
 * on the runner stamps every entry, which moves them all.
 */
function madeWhileLive(p: Present, jobs: LiveJob[], now: number): boolean {
  const made = Math.max(...p.entry.files.map((f) => f.mtimeMs));
  return jobs.some(
    (j) => made >= j.startedAt - WINDOW_SLACK_MS && made <= (j.endedAt ?? now) + WINDOW_SLACK_MS,
  );
}
