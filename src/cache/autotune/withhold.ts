import path from "node:path";
import type { FoundEntry } from "../../kinds/kind.js";
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

/**
 * After the keys are placed: every autotune result in the job's folders is either given to the job
 * (the profile's policy allows its producer, and its salt, if any, still holds) or taken out of the
 * job's folder, with the reason. Results the folders held before the job have no known producer;
 * under `pinned` or `fresh` a folder that held some is never the job's folder (restore-folders.ts
 * gives the job one of its own), so taking them out never makes the runner's folder colder.
 */
export async function withholdAutotune(work: JobContext, sources: Match[]): Promise<AutotuneRestore> {
  const out: AutotuneRestore = { policy: work.autotune.policy, given: [], withheld: [] };
  for (const c of work.caches) {
    const kind = folderKind(c);
    if (!kind) continue;
    for (const e of (await kind.scan(c.path)).entries) {
      if (!kind.isAutotuneResult(e)) continue;
      const { ref, tuning } = producerOf(sources, c.name, e.name);
      const reason = autotuneVerdict(work.autotune, tuning, saltHolds(work.autotune.workdir, ref?.salt));
      const kernel = kernelOf(e);
      if (reason) {
        removeWhole(c.path, path.join(c.path, e.name));
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
  }
  return out;
}

function producerOnly({ profile, benchmark, device, env, revision, at }: Tuning): Omit<Tuning, "id"> {
  return { profile, benchmark, device, env, revision, at };
}

/** The first placed key's record of an entry and its producer. */
function producerOf(sources: Match[], cache: string, name: string): { ref?: EntryRef; tuning?: Tuning } {
  const id = entryId({ cache, name });
  for (const s of sources) {
    const ref = s.manifest.entries.find((e) => entryId(e) === id);
    if (ref) return { ref, tuning: s.manifest.tunings?.find((t) => t.id === ref.tunedBy) };
  }
  return {};
}

/** The kernel an autotune result is for, as people name it: Triton's `<fn>.autotune.json`, Inductor's module. */
export function kernelOf(e: FoundEntry): string {
  const file = e.files.find((f) => f.rel.endsWith(".autotune.json"))?.rel;
  return file
    ? file.replace(/\.autotune\.json$/, "")
    : path.posix.basename(e.name).replace(/\.best_config$/, "");
}
