import { formatBytes } from "../../format.js";
import { isTrustedScope } from "../../keys/scope.js";
import type { EntryRef, Manifest, Use } from "../../manifest/manifest.js";
import type { JobContext } from "../job-context.js";
import type { LocalState } from "../local-state.js";
import type { Prewarmed, RecordedPlan } from "../plan/plan.js";
import { type Present, presentId } from "../save/save-scan.js";
import { chooseEvictions, type EvictionRule } from "./eviction.js";
import { hookUsedEntries, readSinceStamp } from "./usage.js";
import { lastUseOf, type Tally } from "./working-set.js";

/**
 * The most of a key's entries a save drops by the rules (keep-unused runs and days) when the job used
 * none of them: a key's record of use can be wrong (forged, damaged, or a job that did nothing), and
 * on that record alone a save never empties a key (docs/concepts.md).
 */
export const MAX_EVICTED_ON_RECORD = 0.5;

/** What the Triton hook saw a run's commands load (telemetry/, through the pipeline). */
export interface HookUsage {
  /** Every Python process that imported Triton had kcache's cache-manager wrapper in: none was missed. */
  complete: boolean;
  /** Entry folders Triton's cache manager found files in (cache lookups that hit). */
  dirs: string[];
  /** Entry folders the job's processes wrote through Triton's cache manager: what they compiled or tuned. */
  wrote?: string[];
  /**
   * Each file those writes made, with the sha256 of the bytes written and when (seconds since the
   * epoch): on a folder other jobs may write, what a save can attribute to its job (save/save-attribution.ts).
   */
  written?: { folder: string; file: string; sha256: string; t: number | null }[];
  /** Autotune results the job's processes wrote: each entry folder, with the modules that define its kernel. */
  tuned?: { folder: string; modules: string[] }[];
  /** The compile plan the hook recorded (cache/plan/plan.ts), saved beside the key for `kcache prewarm --cpu`. */
  plan?: RecordedPlan;
}

export interface SaveOptions {
  /**
   * Whether this save may evict entries the job did not use: "yes" (the default), "if-new" (a
   * prewarm: one that compiled nothing proves nothing about use), or never, for the reason given.
   */
  evict?: "yes" | "if-new" | { never: string };
  /** What the hook saw; without it use comes from access times alone. */
  hook?: HookUsage;
  /** A CPU prewarm's save: what it compiled ahead, recorded in the key's plan for the GPU job's report. */
  prewarmed?: Prewarmed;
}

/** What a save learnt about use and did with it (SaveReport.usage). */
export interface UsageReport {
  /** How use was learnt: access times, the hook, both, or not at all (then every entry counts as used). */
  source: "atime" | "hook" | "atime+hook" | "none";
  /** This save's number in its chain. */
  generation: number;
  /** Entries the job used (or compiled) in this run. */
  live: Tally;
  /** Entries kept although unused in this run. */
  unused: Tally;
  /** Entries dropped for going unused (they stay in the folder, not in the key). */
  evicted: Tally & { byRule: Record<EvictionRule, number> };
  /** Why this save evicted nothing by rule, if it could not. */
  noEvict: string | null;
}

/** The usage part of a save: each kept entry's last use, the entries evicted, the report. */
export interface UsagePlan {
  now: Use;
  lastUsed: Map<string, Use>;
  evicted: Map<string, EvictionRule>;
  report: UsageReport;
}

export function emptyUsageReport(): UsageReport {
  return {
    source: "none",
    generation: 0,
    live: { entries: 0, bytes: 0 },
    unused: { entries: 0, bytes: 0 },
    evicted: { entries: 0, bytes: 0, byRule: { runs: 0, days: 0, "max-bytes": 0 } },
    noEvict: null,
  };
}

/**
 * Works out which entries the job used: new and changed entries always; of the entries reused from
 * the parent, those read since the restore stamped them (where the restore found that reads move
 * access times) or that the hook saw loaded; every entry where neither can tell. Then the entries
 * the rules evict, unless this save may not evict.
 */
export function assessUsage(input: {
  ctx: JobContext;
  /** The local state, when it is this key's (left by this job's restore). */
  state: LocalState | null;
  opts: SaveOptions;
  parent: Manifest | null;
  parentRefs: Map<string, EntryRef>;
  kept: Present[];
  reused: Present[];
}): UsagePlan {
  const { ctx, state, opts, parent, parentRefs, kept, reused } = input;
  const generation = parent ? (parent.generation ?? 0) + 1 : 0;
  const now: Use = { generation, revision: ctx.revision, at: new Date().toISOString() };
  const report = emptyUsageReport();
  report.generation = generation;
  const atime = state?.usage?.atime ?? {};
  const hookSeen = opts.hook?.complete ? hookUsedEntries(ctx.caches, opts.hook.dirs) : new Set<string>();
  const sources = new Set<"atime" | "hook">();
  const reusedIds = new Set(reused.map(presentId));
  const lastUsed = new Map<string, Use>();
  for (const p of kept) {
    const id = presentId(p);
    const byAtime = atime[p.cache] === true;
    const byHook = opts.hook?.complete === true && p.kind.lookupsSeenByHook;
    if (byAtime) sources.add("atime");
    if (byHook) sources.add("hook");
    const used =
      !reusedIds.has(id) || (!byAtime && !byHook) || (byAtime && readSinceStamp(p.entry)) || hookSeen.has(id);
    // Only an entry reused from the parent can be unused now: it has the parent's record.
    lastUsed.set(id, used ? now : lastUseOf(parent as Manifest, parentRefs.get(id) as EntryRef));
  }
  report.source = sources.has("atime")
    ? sources.has("hook")
      ? "atime+hook"
      : "atime"
    : sources.has("hook")
      ? "hook"
      : "none";
  report.noEvict = whyNoEviction(ctx, opts, parent, kept.length - reused.length);
  let evicted = report.noEvict
    ? new Map<string, EvictionRule>()
    : chooseEvictions(
        kept.map((p) => ({ id: presentId(p), size: p.size, lastUsed: lastUsed.get(presentId(p)) as Use })),
        now,
        {
          keepUnusedRuns: ctx.save.keepUnusedRuns,
          keepUnusedDays: ctx.save.keepUnusedDays,
          maxBytes: ctx.save.maxBytes,
        },
      );
  // The key's own record says they went unused; the job must say something too before most of it goes.
  const readNow = reused.filter((p) => lastUsed.get(presentId(p)) === now).length;
  const byRecord = [...evicted.values()].filter((r) => r !== "max-bytes").length;
  if (readNow === 0 && byRecord > reused.length * MAX_EVICTED_ON_RECORD) {
    report.noEvict = `the job used none of the key's ${reused.length} entries, and its record alone would drop ${byRecord}: more than ${MAX_EVICTED_ON_RECORD * 100}% of the key is never evicted on the record alone`;
    ctx.log.warn(`nothing evicted: ${report.noEvict}`);
    evicted = new Map();
  }
  for (const p of kept) {
    const id = presentId(p);
    const rule = evicted.get(id);
    const tally = rule ? report.evicted : lastUsed.get(id) === now ? report.live : report.unused;
    tally.entries++;
    tally.bytes += p.size;
    if (rule) report.evicted.byRule[rule]++;
  }
  if (report.evicted.byRule["max-bytes"] && [...evicted.keys()].some((id) => lastUsed.get(id) === now))
    ctx.log.warn(
      `save.max-bytes (${ctx.save.maxBytes} bytes) is below what this job used: entries it used were dropped and will compile again`,
    );
  return { now, lastUsed, evicted, report };
}

/** Why a save may not evict (null: it may). */
function whyNoEviction(
  ctx: JobContext,
  opts: SaveOptions,
  parent: Manifest | null,
  fresh: number,
): string | null {
  const evict = opts.evict ?? "yes";
  if (typeof evict === "object") return evict.never;
  if (!parent) return "no parent key: nothing to evict";
  if (!isTrustedScope(ctx.scopes.write))
    return `scope ${ctx.scopes.write} is not a branch's or tag's: its saves never evict`;
  if (evict === "if-new" && fresh === 0) return "a prewarm that compiled nothing never evicts";
  return null;
}

/** The `uses` table a manifest needs for its entries' last uses, each save once, oldest first. */
export function usesTable(lastUsed: Iterable<Use>): Use[] {
  const byGeneration = new Map<number, Use>();
  for (const u of lastUsed) byGeneration.set(u.generation, u);
  return [...byGeneration.values()].sort((a, b) => a.generation - b.generation);
}

/**
 * Where a save's figures of use come from, in words, for every report (the save's line, the run's
 * Markdown). A key's first save (a miss restored nothing) has no use to learn: every entry in it is
 * the job's own; saying "use unknown" there read as a fault.
 */
export function useSource(u: UsageReport): string {
  if (u.generation === 0 && u.unused.entries === 0 && u.evicted.entries === 0)
    return "the key's first save: every entry is this job's own";
  return u.source === "none" ? "use unknown here: every entry counts as used" : `use from ${u.source}`;
}

/** One line for people: what the save learnt about use and what it evicted. */
export function usageSummary(u: UsageReport, keep?: { runs: number; days: number }): string {
  if (u.generation === 0 && u.unused.entries === 0 && u.evicted.entries === 0)
    return `${useSource(u)}: ${u.live.entries} entries (${formatBytes(u.live.bytes)}), nothing to evict`;
  if (u.source === "none" && u.evicted.entries === 0)
    return "use unknown here (no restore stamped access times in this job, or reads do not move them, and no hook): every entry counts as used";
  const by = Object.entries(u.evicted.byRule)
    .filter(([, n]) => n > 0)
    .map(([rule, n]) =>
      rule === "runs" && keep
        ? `${n} unused for ${keep.runs} saves`
        : rule === "days" && keep
          ? `${n} unused for ${keep.days} days`
          : `${n} by ${rule}`,
    );
  return [
    `use (${u.source}): ${u.live.entries} entries (${formatBytes(u.live.bytes)}) used`,
    `${u.unused.entries} (${formatBytes(u.unused.bytes)}) unused and kept`,
    u.evicted.entries
      ? `${u.evicted.entries} (${formatBytes(u.evicted.bytes)}) evicted: ${by.join(", ")}`
      : `none evicted${u.noEvict ? ` (${u.noEvict})` : ""}`,
  ].join(", ");
}
