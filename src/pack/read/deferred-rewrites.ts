import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { type PickleRewrite, runRewritesInBackground } from "../../kinds/pickle-rewriter.js";
import { writeNewFileSync } from "./checked-write.js";

/** What StagedEntry.finish says of an entry whose files wait for their rewrites. */
export const WAITING = Symbol("waiting for its rewrites");

/** An entry whose files wait (entry-stager.ts's StagedEntry): placed or discarded once they are rewritten. */
export interface Waiting {
  readonly target: { staging: string };
  /** Each file's size written, or why it could not be: null once placed, else why not. */
  complete(rewritten: Map<string, number | Error>): string | null;
}

interface Job<E> extends PickleRewrite {
  entry: E;
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
export class DeferredRewrites<E extends Waiting> {
  private readonly jobs: Job<E>[] = [];

  /** Queues `stored` to be rewritten into `out`: written to a file beside the entry's staging place. */
  add(entry: E, rel: string, how: PickleRewrite, stored: Buffer, out: string): void {
    const input = path.join(entry.target.staging, `stored-${randomBytes(8).toString("hex")}`);
    writeNewFileSync(input, stored);
    this.jobs.push({ ...how, entry, rel, input, out });
  }

  /** How many rewrites are queued. */
  get pending(): number {
    return this.jobs.length;
  }

  /** Whether `entry` has rewrites queued. */
  waits(entry: E): boolean {
    return this.jobs.some((j) => j.entry === entry);
  }

  /** Forgets `entry`'s rewrites (it failed before they ran), with their stored files. */
  drop(entry: E): void {
    for (let i = this.jobs.length - 1; i >= 0; i--) {
      const j = this.jobs[i] as Job<E>;
      if (j.entry !== entry) continue;
      fs.rmSync(j.input, { force: true });
      this.jobs.splice(i, 1);
    }
  }

  /**
   * Runs every queued rewrite at once, in the background (this thread reads other packs meanwhile);
   * then each waiting entry is placed or discarded: its reason, or null.
   */
  async run(): Promise<{ entry: E; reason: string | null }[]> {
    const jobs = this.jobs.splice(0);
    let results: (number | Error)[];
    try {
      results = await runRewritesInBackground(jobs);
    } finally {
      for (const j of jobs) fs.rmSync(j.input, { force: true });
    }
    const byEntry = new Map<E, Map<string, number | Error>>();
    jobs.forEach((j, i) => {
      const m = byEntry.get(j.entry) ?? new Map<string, number | Error>();
      m.set(j.rel, results[i] as number | Error);
      byEntry.set(j.entry, m);
    });
    return [...byEntry].map(([entry, rewritten]) => ({ entry, reason: entry.complete(rewritten) }));
  }
}
