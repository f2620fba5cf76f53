import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef, Manifest, Tuning } from "../../manifest/manifest.js";
import type { JobContext } from "../job-context.js";
import type { JobRecord } from "../local-state.js";
import { type Present, presentId } from "../save/save-scan.js";
import type { HookUsage } from "../usage/save-usage.js";
import { hookUsedEntries } from "../usage/usage.js";
import { type Salt, saltOf } from "./salt.js";

/** What a save knows of the autotune results it keeps. */
export interface AutotuneParts {
  /** Ids ("cache\0name") of the kept entries that are autotune results. */
  results: Set<string>;
  /** Salts of results this job tuned, by id (the hook learnt their kernels' modules). */
  salts: Map<string, Salt>;
  /** Who this job's results were produced by. */
  producer: Omit<Tuning, "id">;
  /** Ids of results this job's restore withheld: kept now, the job tuned them again itself. */
  retuned: Set<string>;
}

/**
 * The kept entries that are autotune results, the salts of those this job tuned (where the profile
 * salts, from the kernels' modules the hook saw), and this job as their producer, at `at`.
 */
export function autotuneParts(
  ctx: JobContext,
  kept: Present[],
  hook: HookUsage | undefined,
  at: string,
  /** The job's record from its restore: the results it withheld. */
  job?: JobRecord,
): AutotuneParts {
  const results = new Set(kept.filter((p) => p.kind.isAutotuneResult(p.entry)).map(presentId));
  const salts = new Map<string, Salt>();
  if (ctx.autotune.salt === "package")
    for (const t of hook?.tuned ?? []) {
      const salt = saltOf(ctx.autotune.workdir, t.modules);
      if (salt) for (const id of hookUsedEntries(ctx.caches, [t.folder])) salts.set(id, salt);
    }
  const retuned = new Set(
    (job?.autotune?.withheld ?? []).map((w) => entryId({ cache: w.cache, name: w.entry })),
  );
  return { results, salts, producer: { ...ctx.autotune.producer, revision: ctx.revision, at }, retuned };
}

/**
 * Sets each autotune result's producer (`tunedBy`) and salt on `entries`, and returns the table they
 * point into. A result the parent has byte for byte keeps the parent's producer and salt (so
 * provenance survives delta saves and consolidations), unless this job's restore withheld it: then
 * the job tuned it again, and the same bytes are its own (a pinned benchmark would otherwise be
 * denied its own winners on every run). Any other was tuned by this job. Entries that are not
 * autotune results carry neither.
 */
export function recordProducers(
  entries: EntryRef[],
  parent: Manifest | null,
  parentRefs: Map<string, EntryRef>,
  parts: AutotuneParts,
): Tuning[] {
  const table: Tuning[] = [];
  const ids = new Map<string, number>();
  const idOf = (t: Omit<Tuning, "id">) => {
    const key = JSON.stringify([
      t.profile,
      t.benchmark,
      t.device,
      Object.entries(t.env).sort(),
      t.revision,
      t.at,
    ]);
    let id = ids.get(key);
    if (id === undefined) {
      id = table.length;
      ids.set(key, id);
      table.push({ id, ...t });
    }
    return id;
  };
  for (const e of entries) {
    delete e.tunedBy;
    delete e.salt;
    const id = entryId(e);
    if (!parts.results.has(id)) continue;
    const before = parentRefs.get(id);
    if (before && before.sha256 === e.sha256 && !parts.retuned.has(id)) {
      const t = parent?.tunings?.find((x) => x.id === before.tunedBy);
      if (t) e.tunedBy = idOf(withoutId(t));
      if (before.salt) e.salt = before.salt;
      continue;
    }
    e.tunedBy = idOf(parts.producer);
    const salt = parts.salts.get(id);
    if (salt) e.salt = salt;
  }
  return table;
}

function withoutId({ profile, benchmark, device, env, revision, at }: Tuning): Omit<Tuning, "id"> {
  return { profile, benchmark, device, env, revision, at };
}
