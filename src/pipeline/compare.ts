import fs from "node:fs";
import path from "node:path";
import type { LazyReport } from "../cache/lazy/job-lookups.js";
import { diffRecords, medianOf, type RecordDiff } from "../checks/record-diff.js";
import { type ResultRecord, readRecords } from "../checks/records.js";
import type { CompareSpec } from "../config/profile-schema.js";
import { withCaches } from "../job/build-job.js";
import { manifestObject } from "../store/layout.js";
import { jobProfile, type RunOptions, type RunReport, runProfile, type Stage } from "./run-profile.js";

export const COMPARE_SCHEMA = "kcache-compare/1";

export interface Stats {
  median: number;
  min: number;
  max: number;
  values: number[];
}

export interface CompareRun {
  label: string;
  kind: "cold" | "warm";
  round: number;
  seconds: number;
  passed: boolean;
  restoreSeconds: number;
  saveSeconds: number;
  kernelsCompiled: number;
  /** Null where only the cache folder counted kernels (no listener: loads are unknown). */
  kernelsLoaded: number | null;
  commands: { name: string; seconds: number; compiled: number; loaded: number | null }[];
  /** Autotune results the run's kernels ran on: given by the restore (pinned winners) or tuned in the run. */
  autotune: { given: number; tuned: number; producers: string[] };
  stages: Stage[];
  /** A lazy restore's and live sharing's counts (restore: lazy, store.live); absent or null without. */
  lazy?: LazyReport | null;
}

export interface CompareReport {
  schema: typeof COMPARE_SCHEMA;
  profile: string;
  key: string;
  revision: string;
  stackId: string;
  rounds: number;
  startedAt: string;
  runs: CompareRun[];
  summary: {
    cold: Stats;
    warm: Stats;
    savedSeconds: number;
    reductionPct: number;
    commands: { name: string; cold: Stats; warm: Stats; savedSeconds: number; reductionPct: number }[];
    kernelsCompiled: { cold: number[]; warm: number[] };
    restoreSeconds: Stats;
    saveSeconds: Stats;
  };
  /** Per-record timing changes from cold to warm, when the profile names its result file. */
  records: RecordDiff | null;
  /** Every run passed its commands and checks. */
  passed: boolean;
}

export function stats(values: number[]): Stats {
  return values.length
    ? { median: medianOf(values), min: Math.min(...values), max: Math.max(...values), values }
    : { median: 0, min: 0, max: 0, values };
}

/**
 * `kcache compare`: on this machine and revision, alternates cold runs (empty cache folders, nothing
 * restored) and warm runs (restored from the store), `rounds` of each, with the same commands and
 * environment. The store is seeded by the first cold run when it lacks this revision's key; no other
 * run saves, so every warm run restores the same thing.
 */
export async function compare(
  opts: RunOptions & { rounds: number; records?: CompareSpec },
): Promise<CompareReport> {
  const { job } = opts;
  const { ctx, cwd } = job;
  const { name: profileName, spec: profile } = jobProfile(job);
  const spec = opts.records ?? profile.compare;
  const outDir = path.resolve(cwd, opts.outDir);
  let seeded = await ctx.store.exists(manifestObject(ctx.scopes.write, ctx.key));
  const runs: CompareRun[] = [];
  const results: Record<"cold" | "warm", ResultRecord[][]> = { cold: [], warm: [] };
  const t0 = new Date();

  for (let round = 1; round <= opts.rounds; round++) {
    for (const kind of ["cold", "warm"] as const) {
      const label = `${kind}-${round}`;
      const runDir = path.join(outDir, "runs", label);
      fs.rmSync(runDir, { recursive: true, force: true });
      // Fresh, empty cache folders for every run, cold or warm.
      const caches = ctx.caches.map((c) => ({ ...c, path: path.join(runDir, `cache-${c.name}`) }));
      const save = kind === "cold" && !seeded;
      ctx.log.info(
        `${label}: ${kind === "cold" ? "empty caches, nothing restored" : "restored from the store"}${save ? ", saving to seed the warm runs" : ""}`,
      );
      // The same stack and revision for every run: the job's, probed once.
      const report = await runProfile({
        ...opts,
        job: withCaches(job, caches),
        outDir: runDir,
        restore: kind === "warm",
        save,
        // Deliberate cold runs are no history: they would read as cache misses in kcache stats.
        record: false,
      });
      if (save && report.save) seeded = true;
      runs.push(summarise(label, kind, round, report));
      if (spec) {
        const file = path.resolve(profile.workdir ? path.resolve(cwd, profile.workdir) : cwd, spec.file);
        if (fs.existsSync(file)) {
          fs.copyFileSync(file, path.join(runDir, path.basename(file)));
          try {
            results[kind].push(readRecords(file, spec.records));
          } catch (e) {
            ctx.log.warn(`${label}: ${(e as Error).message}`);
          }
        } else ctx.log.warn(`${label}: ${file} was not written`);
      }
      for (const c of caches) fs.rmSync(c.path, { recursive: true, force: true });
    }
  }

  return {
    schema: COMPARE_SCHEMA,
    profile: profileName,
    key: ctx.key,
    revision: ctx.revision,
    stackId: ctx.stack.stackId,
    rounds: opts.rounds,
    startedAt: t0.toISOString(),
    runs,
    summary: summary(runs),
    records: spec ? diffRecords(results.cold, results.warm, spec.key, spec.metrics, spec.threshold) : null,
    passed: runs.every((r) => r.passed),
  };
}

/** Medians (and ranges) of the cold and warm runs, per run and per command, and what the cache saved. */
function summary(runs: CompareRun[]): CompareReport["summary"] {
  const of = (kind: "cold" | "warm") => runs.filter((r) => r.kind === kind);
  const cold = stats(of("cold").map((r) => r.seconds));
  const warm = stats(of("warm").map((r) => r.seconds));
  const names = [...new Set(runs.flatMap((r) => r.commands.map((c) => c.name)))];
  const secondsOf = (kind: "cold" | "warm", name: string) =>
    stats(of(kind).flatMap((r) => r.commands.filter((x) => x.name === name).map((x) => x.seconds)));
  const commands = names.map((name) => {
    const c = secondsOf("cold", name);
    const w = secondsOf("warm", name);
    return {
      name,
      cold: c,
      warm: w,
      savedSeconds: c.median - w.median,
      reductionPct: pct(c.median, w.median),
    };
  });
  return {
    cold,
    warm,
    savedSeconds: cold.median - warm.median,
    reductionPct: pct(cold.median, warm.median),
    commands,
    kernelsCompiled: {
      cold: of("cold").map((r) => r.kernelsCompiled),
      warm: of("warm").map((r) => r.kernelsCompiled),
    },
    restoreSeconds: stats(of("warm").map((r) => r.restoreSeconds)),
    saveSeconds: stats(runs.filter((r) => r.saveSeconds > 0).map((r) => r.saveSeconds)),
  };
}

function pct(cold: number, warm: number): number {
  return cold > 0 ? ((cold - warm) / cold) * 100 : 0;
}

function summarise(label: string, kind: "cold" | "warm", round: number, r: RunReport): CompareRun {
  const stage = (name: string) => r.stages.find((s) => s.kind === name)?.seconds ?? 0;
  return {
    label,
    kind,
    round,
    seconds: r.seconds,
    passed: r.passed,
    restoreSeconds: stage("restore"),
    saveSeconds: r.save ? stage("save") : 0,
    kernelsCompiled: r.kernels.compiled,
    kernelsLoaded: r.kernels.loaded,
    commands: r.commands.map((c) => ({
      name: c.name,
      seconds: c.seconds,
      compiled: c.kernels.compiled,
      loaded: c.kernels.loaded,
    })),
    autotune: autotuneOf(r),
    stages: r.stages,
    lazy: r.lazy ?? null,
  };
}

/** How many of a run's autotune lookups found a given winner, how many tuned one, and who produced the given ones. */
function autotuneOf(r: RunReport): CompareRun["autotune"] {
  const out = { given: 0, tuned: 0, producers: [] as string[] };
  for (const c of r.commands) {
    out.given += c.autotune?.pinned.length ?? 0;
    out.tuned += c.autotune?.fresh.length ?? 0;
    for (const p of c.autotune?.pinned ?? []) {
      const who = p.producer
        ? `${p.producer.profile || "(no profile)"}${p.producer.benchmark ? " (benchmark)" : ""} at ${p.producer.revision.slice(0, 12)}`
        : p.earlierInRun
          ? "this run"
          : "unknown";
      if (!out.producers.includes(who)) out.producers.push(who);
    }
  }
  return out;
}
