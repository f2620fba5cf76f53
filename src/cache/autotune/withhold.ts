import path from "node:path";
import type { CacheKind, FoundEntry, ScanResult } from "../../kinds/kind.js";
import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef, Tuning } from "../../manifest/manifest.js";
import { folderKind } from "../cache-folder.js";
import type { JobContext } from "../job-context.js";
import type { Match } from "../lookup.js";
import { removeWhole } from "../persistent/remove-whole.js";
import { autotuneVerdict, type WithheldReason } from "./policy.js";
import { saltHolds } from "./salt.js";

/** An autotune result the job was given, and who produced it (null: unknown). */
export interface GivenResult {
  cache: string;
  entry: string;
  kernel: string;
  producer: Omit<Tuning, "id"> | null;
}

export interface WithheldResult {
  cache: string;
  entry: string;
  kernel: string;
  reason: WithheldReason;
}

/** What a restore did with the autotune results in the job's folders (docs/benchmarks.md). */
export interface AutotuneRestore {
  policy: JobContext["autotune"]["policy"];
  given: GivenResult[];
  withheld: WithheldResult[];
}

/** A folder's entries as the last look at it found them, with the kind it was scanned as. */
export type FolderScans = Map<string, { kind: CacheKind; scan: ScanResult }>;

/**
 * After the keys are placed: every autotune result in the job's folders is either given to the job
 * (the profile's policy allows its producer, and its salt, if any, still holds) or taken out of the
 * job's folder, with the reason. Results the folders held before the job have no known producer;
 * under `pinned` or `fresh` a folder that held some is never the job's folder (restore-folders.ts
 * gives the job one of its own), so taking them out never makes the runner's folder colder.
 * `scanned` gets each folder's entries as they are left (the state records them without a second
 * scan: 2,000 entries are 12,000 stats).
 */
export async function withholdAutotune(
  work: JobContext,
  sources: Match[],
  scanned?: FolderScans,
): Promise<AutotuneRestore> {
  const out: AutotuneRestore = { policy: work.autotune.policy, given: [], withheld: [] };
  const producers = new Producers(sources);
  for (const c of work.caches) {
    const kind = folderKind(c);
    if (!kind) continue;
    const scan = await kind.scan(c.path);
    const removed = new Set<FoundEntry>();
    for (const e of scan.entries) {
      if (!kind.isAutotuneResult(e)) continue;
      const { ref, tuning } = producers.of(c.name, e.name);
      const reason = autotuneVerdict(work.autotune, tuning, saltHolds(work.autotune.workdir, ref?.salt));
      const kernel = kernelOf(e);
      if (reason) {
        removeWhole(c.path, path.join(c.path, e.name));
        removed.add(e);
        out.withheld.push({ cache: c.name, entry: e.name, kernel, reason });
      } else {
        out.given.push({
          cache: c.name,
          entry: e.name,
          kernel,
          producer: tuning ? producerOnly(tuning) : null,
        });
      }
    }
    scanned?.set(c.name, { kind, scan: { ...scan, entries: scan.entries.filter((e) => !removed.has(e)) } });
  }
  return out;
}

function producerOnly({ profile, benchmark, device, env, revision, at }: Tuning): Omit<Tuning, "id"> {
  return { profile, benchmark, device, env, revision, at };
}

/**
 * Each result's record and producer in the first placed key that lists it. Indexed once, when the
 * first result is looked up: a search of every manifest per result was quadratic (2,000 results
 * in a 4,000-entry key are 8 million comparisons).
 */
class Producers {
  private index: Map<string, { ref: EntryRef; tuning?: Tuning }> | null = null;

  constructor(private readonly sources: Match[]) {}

  of(cache: string, name: string): { ref?: EntryRef; tuning?: Tuning } {
    if (!this.index) {
      this.index = new Map();
      for (const s of this.sources) {
        const tunings = new Map((s.manifest.tunings ?? []).map((t) => [t.id, t]));
        for (const ref of s.manifest.entries) {
          const id = entryId(ref);
          if (!this.index.has(id))
            this.index.set(id, {
              ref,
              tuning: ref.tunedBy === undefined ? undefined : tunings.get(ref.tunedBy),
            });
        }
      }
    }
    return this.index.get(entryId({ cache, name })) ?? {};
  }
}

/** The kernel an autotune result is for, as people name it: Triton's `<fn>.autotune.json`, Inductor's module. */
export function kernelOf(e: FoundEntry): string {
  const file = e.files.find((f) => f.rel.endsWith(".autotune.json"))?.rel;
  return file
    ? file.replace(/\.autotune\.json$/, "")
    : path.posix.basename(e.name).replace(/\.best_config$/, "");
}
