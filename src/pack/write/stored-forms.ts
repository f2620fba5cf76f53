import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { type CacheKind, entryFilePath, type FoundEntry } from "../../kinds/kind.js";
import {
  type PickleRewrite,
  RelocationError,
  type RewriteJob,
  runRewrites,
  runRewritesInBackground,
} from "../../kinds/pickle-rewriter.js";
import { readUnseen } from "../../unseen-read.js";

/** An entry's files whose stored form was written ahead: rel -> [the file holding it, its size]. */
export type StoredFiles = Record<string, [string, number]>;

/** An entry as a save holds it. */
export interface FormEntry {
  kind: CacheKind;
  root: string;
  entry: FoundEntry;
}

/**
 * The stored forms of a save's files that a child process writes (torch.compile's pickles, named for
 * their folder), each written once, by one rewriter process per batch: the entries a save hashes, then
 * the ones it packs. A save started one process per pickle before, twice for an entry it hashed and
 * then packed (7.3 s for 5,209 files; 17 minutes for 400 pickles on a loaded 2-core machine). Hashing
 * and packing then read the same written form (entry-source.ts). A file changed while its batch ran
 * gets no written form: it is rewritten alone when opened, as before. Plain data: it crosses to the
 * pack worker threads.
 */
export class StoredForms {
  private dir: string | null = null;
  private readonly forms = new Map<string, StoredFiles>();
  private readonly done = new Set<string>();
  /** Rewriter processes started, and files rewritten, for the save's report. */
  readonly counts = { processes: 0, files: 0 };

  /** Writes the stored forms of `entries`' files that need a child process, in one process. */
  prepare(entries: FormEntry[]): void {
    const jobs = this.jobsFor(entries);
    if (jobs.length) this.keep(jobs, runRewrites(jobs));
  }

  /**
   * prepare, in the background: the entries whose forms it writes (by formId), and when they are
   * written. A save builds its other packs meanwhile.
   */
  prepareInBackground(entries: FormEntry[]): { waiting: Set<string>; written: Promise<void> } {
    const jobs = this.jobsFor(entries);
    const waiting = new Set(jobs.map((j) => j.id));
    const written = jobs.length
      ? runRewritesInBackground(jobs).then((results) => this.keep(jobs, results))
      : Promise.resolve();
    return { waiting, written };
  }

  /** The rewrites `entries`' files need that no earlier batch ran. */
  private jobsFor(entries: FormEntry[]): FormJob[] {
    const jobs: FormJob[] = [];
    for (const { kind, root, entry } of entries) {
      const id = formId(root, entry);
      if (!kind.normalization || this.done.has(id)) continue;
      this.done.add(id);
      for (const f of entry.files) {
        if (!kind.isRelocatable(entry.name, f.rel)) continue;
        const input = entryFilePath(root, entry, f.rel);
        let how: PickleRewrite | null;
        try {
          how = kind.normalization(root, entry.name, f.rel, readUnseen(input));
        } catch {
          continue; // gone since the scan, or not a pickle: opening the entry alone says why
        }
        if (!how) continue;
        this.dir ??= fs.mkdtempSync(path.join(os.tmpdir(), "kcache-stored-"));
        const out = path.join(this.dir, String(this.counts.files + jobs.length));
        jobs.push({ ...how, input, out, id, rel: f.rel, stat: statOf(input) });
      }
    }
    if (jobs.length) {
      this.counts.processes++;
      this.counts.files += jobs.length;
    }
    return jobs;
  }

  /** Keeps the forms a batch wrote, of files unchanged while it ran. */
  private keep(jobs: FormJob[], results: (number | RelocationError)[]): void {
    results.forEach((r, i) => {
      const j = jobs[i] as FormJob;
      // One the rewriter refused is rewritten alone when opened, which says why.
      if (!(r instanceof RelocationError) && statOf(j.input) === j.stat) {
        const files = this.forms.get(j.id) ?? {};
        files[j.rel] = [j.out, r];
        this.forms.set(j.id, files);
      }
    });
  }

  /** The written forms of an entry's files; undefined where none was written. */
  of(root: string, entry: FoundEntry): StoredFiles | undefined {
    return this.forms.get(formId(root, entry));
  }

  /** Removes the written forms (the save is over). */
  dispose(): void {
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
    this.forms.clear();
  }
}

/** One file's rewrite in a batch, and what tells whether the file changed while it ran. */
type FormJob = RewriteJob & { id: string; rel: string; stat: string };

/** What identifies an entry's forms: its folder and name. */
export function formId(root: string, entry: FoundEntry): string {
  return `${root}\0${entry.name}`;
}

/** What tells a file changed: its size and modification time. */
function statOf(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.size}:${st.mtimeMs}`;
  } catch {
    return "gone";
  }
}
