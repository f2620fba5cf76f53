import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { type PickleRewrite, runRewrites } from "../../kinds/pickle-rewriter.js";
import { writeFullySync } from "./checked-write.js";
import type { StagedEntry } from "./entry-stager.js";

/** What StagedEntry.finish says of an entry whose files wait for their rewrites. */
export const WAITING = Symbol("waiting for its rewrites");

interface Job extends PickleRewrite {
  entry: StagedEntry;
  rel: string;
  input: string;
  out: string;
}

/**
 * The rewrites a pack's verified entries wait for (torch.compile's pickles), run together at the
 * end of the pack in one child process, not one per pickle. Each stored pickle waits in a file of
 * the restore's private staging folder, not in memory; its entry is placed (or discarded) once its
 * rewrites ran.
 */
export class DeferredRewrites {
  private readonly jobs: Job[] = [];

  /** Queues `stored` to be rewritten into `out`: written to a file beside the entry's staging place. */
  add(entry: StagedEntry, rel: string, how: PickleRewrite, stored: Buffer, out: string): void {
    const input = path.join(entry.target.staging, `stored-${randomBytes(8).toString("hex")}`);
    const fd = fs.openSync(input, "wx");
    try {
      writeFullySync(fd, stored, input);
    } finally {
      fs.closeSync(fd);
    }
    this.jobs.push({ ...how, entry, rel, input, out });
  }

  /** Whether `entry` has rewrites queued. */
  waits(entry: StagedEntry): boolean {
    return this.jobs.some((j) => j.entry === entry);
  }

  /** Forgets `entry`'s rewrites (it failed before they ran), with their stored files. */
  drop(entry: StagedEntry): void {
    for (let i = this.jobs.length - 1; i >= 0; i--) {
      const j = this.jobs[i] as Job;
      if (j.entry !== entry) continue;
      fs.rmSync(j.input, { force: true });
      this.jobs.splice(i, 1);
    }
  }

  /** Runs every queued rewrite at once; then each waiting entry is placed or discarded: its reason, or null. */
  run(): { entry: StagedEntry; reason: string | null }[] {
    const jobs = this.jobs.splice(0);
    let results: (number | Error)[];
    try {
      results = runRewrites(jobs);
    } finally {
      for (const j of jobs) fs.rmSync(j.input, { force: true });
    }
    const byEntry = new Map<StagedEntry, Map<string, number | Error>>();
    jobs.forEach((j, i) => {
      const m = byEntry.get(j.entry) ?? new Map<string, number | Error>();
      m.set(j.rel, results[i] as number | Error);
      byEntry.set(j.entry, m);
    });
    return [...byEntry].map(([entry, rewritten]) => ({ entry, reason: entry.complete(rewritten) }));
  }
}
