import type { Manifest } from "../../manifest/manifest.js";
import type { WrittenPack } from "../../pack/write/pack-writer.js";
import type { Fault } from "../faults.js";
import type { JobContext } from "../job-context.js";
import { emptyUsageReport, type UsageReport } from "../usage/save-usage.js";
import type { Tally } from "../usage/working-set.js";
import type { SharedFolderReport } from "./save-attribution.js";
import type { Reframed, SavePlan } from "./save-plan.js";
import type { Skipped } from "./save-scan.js";

export type SaveOutcome = "saved" | "nothing-new" | "key-exists" | "empty" | "lost-race";

export interface SaveReport {
  primaryKey: string;
  /** The store written to, as a person reads it. */
  store: string;
  scope: string;
  outcome: SaveOutcome;
  /** One line a person reads: what happened and why. */
  message: string;
  parentKey: string | null;
  entries: number;
  entriesNew: number;
  entriesReused: number;
  entriesDropped: number;
  /**
   * Compiled kernels (entries a kind counts as kernels: not launchers, autotune results or other
   * files): those of the restored key the folders held (found without compiling), and new ones.
   */
  kernels: { found: number; new: number };
  packsWritten: number;
  /** Compressed bytes uploaded (packs and manifest). */
  bytesUploaded: number;
  consolidated: boolean;
  /**
   * A lazy cache's entries packed again, each in frames of its own, so that the next lazy restore
   * reads only what jobs use (their packs had no frames); null when none were.
   */
  reframed: Reframed | null;
  /** Which entries the job used, which it did not, and which went for that (eviction by use). */
  usage: UsageReport;
  skipped: Skipped;
  /**
   * Entries in the folders that this save could not vouch for and so left out: `unverified`, those
   * the folder held before the job (as its restore recorded them, unchanged since) that are not in
   * the key it restored (a pull request's job on this runner may have made them); `otherRevisions`,
   * those borrowed from other revisions' keys (restore-revisions), which those keys hold.
   */
  /** `live`: entries the job got from other jobs' live objects (store.live), which only their own job's save may key. */
  leftOut: { unverified: Tally; otherRevisions: Tally; otherJobs: Tally; live: Tally };
  /**
   * A trusted save on folders other jobs may write (save-attribution.ts): which, whether the job's
   * hook recorded what its processes wrote, and how many new entries that record made the job's own;
   * null where no folder was such (isolate, trust-local, an ephemeral runner, a fresh folder, no
   * restore, an untrusted scope). `leftOut.otherJobs` counts the new or changed entries it could not
   * attribute to its job.
   */
  sharedFolder: SharedFolderReport | null;
  /**
   * torch.compile's pickles that name their folder, rewritten to their stored form before hashing or
   * packing: how many, by how many rewriter processes (one per batch: the entries hashed, then packed).
   */
  rewriter: { processes: number; files: number };
  /** Faults the save met and recovered from, coded (faults.ts); --strict fails on those it names, once the key is saved. */
  faults: Fault[];
  seconds: number;
  caches: { name: string; entries: number; bytes: number }[];
}

/**
 * Whether a save recorded a new key: one that packed new entries ("saved") and one that recorded the
 * key over its parent's packs with nothing new to pack ("nothing-new") both did.
 */
export function keyRecorded(outcome: SaveOutcome | undefined): boolean {
  return outcome === "saved" || outcome === "nothing-new";
}

/** A save's report before any phase ran. */
export function emptySaveReport(ctx: JobContext): SaveReport {
  return {
    primaryKey: ctx.key,
    store: ctx.store.description,
    scope: ctx.scopes.write,
    outcome: "saved",
    message: "",
    parentKey: null,
    entries: 0,
    entriesNew: 0,
    entriesReused: 0,
    entriesDropped: 0,
    kernels: { found: 0, new: 0 },
    packsWritten: 0,
    bytesUploaded: 0,
    consolidated: false,
    reframed: null,
    usage: emptyUsageReport(),
    skipped: {
      incomplete: 0,
      tempDirs: 0,
      lockFiles: 0,
      localFiles: 0,
      otherFiles: 0,
      vanished: 0,
      notRelocatable: 0,
    },
    leftOut: {
      unverified: { entries: 0, bytes: 0 },
      otherRevisions: { entries: 0, bytes: 0 },
      otherJobs: { entries: 0, bytes: 0 },
      live: { entries: 0, bytes: 0 },
    },
    sharedFolder: null,
    rewriter: { processes: 0, files: 0 },
    faults: [],
    seconds: 0,
    caches: ctx.caches.map((c) => ({ name: c.name, entries: 0, bytes: 0 })),
  };
}

/** Counts what a committed save holds and what it wrote. */
export function countSaved(
  report: SaveReport,
  plan: SavePlan,
  manifest: Manifest,
  written: WrittenPack[],
  manifestBytes: number,
): void {
  report.entries = manifest.entries.length;
  report.entriesNew = written.reduce((s, w) => s + w.entries.length, 0) - plan.repacked;
  report.entriesReused = plan.stay.length;
  report.entriesDropped = plan.dropped;
  report.packsWritten = written.length;
  report.bytesUploaded = written.reduce((s, w) => s + w.size, 0) + manifestBytes;
  for (const e of manifest.entries) {
    const c = report.caches.find((x) => x.name === e.cache);
    if (c) {
      c.entries++;
      c.bytes += e.size;
    }
  }
}

/** Why a save with no entry of its own saved nothing, as a person reads it. */
export function nothingToSave(report: SaveReport): string {
  const { unverified, live } = report.leftOut;
  if (unverified.entries)
    return `nothing this job can vouch for: the ${unverified.entries} entries in the caches were there before it and are in no key it restored (local, unverified); nothing saved`;
  if (live.entries)
    return `nothing of its own: the ${live.entries} entries in the caches came from other jobs live, and those jobs' saves key them; nothing saved`;
  return "the caches hold no complete entries; nothing saved";
}
