import fs from "node:fs";
import path from "node:path";
import { type CacheKind, entryFilePath, type FoundEntry } from "../../kinds/kind.js";
import { place } from "../../pack/read/entry-place.js";
import { makeStaging } from "../../pack/read/staging-owner.js";
import { readUnseen } from "../../unseen-read.js";
import { shareEntry } from "./job-folder.js";

export interface MergeReport {
  /** Entries placed into the persistent folder (absent there, or different). */
  merged: number;
  /** Entries the persistent folder already held as they are (the same files, linked). */
  same: number;
  /** Entries that vanished or could not be placed (the next job compiles them if it needs them). */
  failed: number;
  seconds: number;
}

/**
 * Merges a job folder's `entries` (those the job may vouch for: restored from a trusted key, or
 * compiled by the job) into the persistent folder `root`. Each entry is staged whole inside `root`
 * (files linked from the job folder, relocatable ones rewritten for `root`) and renamed into place,
 * so a merge killed at any point leaves every entry of `root` whole: the old one or the new one.
 */
export function mergeJobFolder(
  kind: CacheKind,
  job: string,
  root: string,
  entries: FoundEntry[],
): MergeReport {
  const t0 = performance.now();
  const report: MergeReport = { merged: 0, same: 0, failed: 0, seconds: 0 };
  const staging = makeStaging(root);
  fs.mkdirSync(path.join(staging, "e"));
  try {
    for (const entry of entries) {
      if (alreadyThere(kind, job, root, entry)) {
        report.same++;
        continue;
      }
      const staged = { from: job, to: path.join(staging, "e"), root };
      const count = { linked: 0, copied: 0 };
      try {
        if (!shareEntry(kind, entry, staged, count)) throw new Error("vanished");
        place(path.join(staged.to, entry.name), root, entry.name, staging);
        report.merged++;
      } catch {
        report.failed++;
      }
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  report.seconds = (performance.now() - t0) / 1000;
  return report;
}

/**
 * Whether `root` holds the entry as the job folder has it: the very files (hard links of them),
 * relocatable ones the same once stored, and no others.
 */
function alreadyThere(kind: CacheKind, job: string, root: string, entry: FoundEntry): boolean {
  if (kind.entryShape === "folder") {
    try {
      if (fs.readdirSync(path.join(root, entry.name)).length !== entry.files.length) return false;
    } catch {
      return false;
    }
  }
  return entry.files.every((f) => {
    const there = entryFilePath(root, entry, f.rel);
    try {
      if (!kind.isRelocatable(entry.name, f.rel)) return fs.statSync(there).ino === f.ino;
      const stored = (from: string, p: string) => kind.normalize(from, entry.name, f.rel, readUnseen(p));
      return stored(root, there).equals(stored(job, entryFilePath(job, entry, f.rel)));
    } catch {
      return false;
    }
  });
}
