import { randomBytes } from "node:crypto";
import path from "node:path";
import type { JobContext } from "../cache/job-context.js";
import { type ReadWhole, WHOLE_REASONS, wholeWords } from "../cache/lazy/lazy-plan.js";
import { getPath, identity, readRecords } from "../checks/records.js";
import type { CompareSpec } from "../config/profile-schema.js";
import { parseRunObject, RUNS, runObject } from "../store/layout.js";
import type { Store } from "../store/store.js";

/** What a finished run reports that its record keeps (the fields of run-profile.ts's RunReport it reads). */
export interface RunOutcome {
  profile: string;
  scope: string;
  key: string;
  revision: string;
  stackId: string;
  startedAt: string;
  seconds: number;
  passed: boolean;
  firstFailure: string | null;
  stages: { name: string; kind: string; seconds: number; status: string }[];
  kernels: {
    status: string;
    source: string;
    loaded: number | null;
    compiled: number;
    compileSeconds: number | null;
  };
  restore: {
    cacheHit: boolean;
    matchedKey: string | null;
    entriesRestored: number;
    bytesRestored: number;
  } | null;
  save: { outcome: string; bytesUploaded: number } | null;
  /** A lazy restore's and live sharing's counts (run-profile.ts's LazyReport), when the job had lookups served. */
  lazy?: LazyCounts | null;
}

/** What `kcache stats` sums of a job's lazy restore and live sharing. */
export interface LazyCounts {
  prefetched: number;
  onDemand: number;
  live: number;
  neverFetched: number;
  bytesRead: number;
  waitSeconds: number;
  /** The restore's packs read whole, by reason (absent in older records, and where none were). */
  readWhole?: ReadWhole;
}

const LAZY_FIELDS = ["prefetched", "onDemand", "live", "neverFetched", "bytesRead", "waitSeconds"] as const;

export const RUN_RECORD_SCHEMA = "kcache-run-record/1";
/** `kernels.source` of a drop-in run without kcache's hook: its counts are cache entries, not kernels. */
export const ENTRIES = "cache-entries";

/**
 * Whether a record's kernel counts are cache entries: a drop-in run without the hook, or one written
 * before drop-in runs counted kernels (its save counted entries as `cache-folder`).
 */
export function countsEntries(r: Pick<RunRecord, "kernels" | "via">): boolean {
  const k = r.kernels;
  return (
    k.source === ENTRIES || (r.via === "save" && k.source === "cache-folder" && k.status === "not-observed")
  );
}
/** The most result records one run record keeps. */
const MAX_RECORDS = 2000;

/** What one `kcache run` leaves in the store: small, and enough for `kcache stats` and baselines. */
export interface RunRecord
  extends Pick<
    RunOutcome,
    | "profile"
    | "scope"
    | "key"
    | "revision"
    | "stackId"
    | "startedAt"
    | "seconds"
    | "passed"
    | "firstFailure"
    | "stages"
    | "kernels"
  > {
  schema: typeof RUN_RECORD_SCHEMA;
  /** What wrote it: `kcache run` (absent in older records), or a drop-in save (drop-in-record.ts). */
  via?: "run" | "save";
  /** A drop-in save after a restore: seconds between the restore's end and the save's start (the job's own work). */
  jobSeconds?: number;
  /** A drop-in save: the key its restore restored. */
  matchedKey?: string | null;
  prefix: string;
  /** exact: the key itself; prefix: an older key; miss: nothing restored; none: not restored (cold run). */
  hit: "exact" | "prefix" | "miss" | "none";
  restore: { seconds: number; entries: number; bytes: number } | null;
  save: { seconds: number; outcome: string; bytesUploaded: number } | null;
  /** The checked result records the profile's compare: section names: identity and metric values. */
  records: { id: string; metrics: Record<string, number> }[];
  /** The values a `baseline: history` threshold check read, by check name: what later runs compare with. */
  history?: Record<string, HistoryRows>;
  /** Entries fetched ahead, on demand and live, never fetched; bytes read and seconds waited (restore: lazy, store.live). */
  lazy?: LazyCounts;
}

/** One `baseline: history` check's values in one run. */
export interface HistoryRows {
  key: string[];
  field: string;
  rows: { key: Record<string, unknown>; value: number }[];
}

export function runRecord(
  report: RunOutcome,
  ctx: Pick<JobContext, "prefix">,
  compare: CompareSpec | undefined,
  workdir: string,
  history: Record<string, HistoryRows> = {},
): RunRecord {
  const stage = (kind: string) => report.stages.find((s) => s.kind === kind);
  const r = report.restore;
  const hit = !r ? "none" : r.cacheHit ? "exact" : r.matchedKey ? "prefix" : "miss";
  let records: RunRecord["records"] = [];
  if (compare) {
    try {
      records = readRecords(path.resolve(workdir, compare.file), compare.records)
        .slice(0, MAX_RECORDS)
        .map((rec) => ({
          id: identity(rec, compare.key),
          metrics: Object.fromEntries(
            compare.metrics
              .map((m) => [m, getPath(rec, m)] as const)
              .filter(
                (e): e is readonly [string, number] => typeof e[1] === "number" && Number.isFinite(e[1]),
              ),
          ),
        }));
    } catch {
      records = []; // a missing result file is the checks' business; the record just has none
    }
  }
  return {
    schema: RUN_RECORD_SCHEMA,
    via: "run",
    profile: report.profile,
    prefix: ctx.prefix,
    scope: report.scope,
    key: report.key,
    revision: report.revision,
    stackId: report.stackId,
    startedAt: report.startedAt,
    seconds: report.seconds,
    passed: report.passed,
    firstFailure: report.firstFailure,
    hit,
    stages: report.stages.map((s) => ({ name: s.name, kind: s.kind, seconds: s.seconds, status: s.status })),
    kernels: report.kernels,
    restore: r
      ? { seconds: stage("restore")?.seconds ?? 0, entries: r.entriesRestored, bytes: r.bytesRestored }
      : null,
    save: report.save
      ? {
          seconds: stage("save")?.seconds ?? 0,
          outcome: report.save.outcome,
          bytesUploaded: report.save.bytesUploaded,
        }
      : null,
    records,
    ...(Object.keys(history).length ? { history } : {}),
    ...(report.lazy ? { lazy: lazyCounts(report.lazy) } : {}),
  };
}

function lazyCounts(l: LazyCounts): LazyCounts {
  const counts = Object.fromEntries(LAZY_FIELDS.map((f) => [f, l[f]])) as unknown as LazyCounts;
  return wholeWords(l.readWhole) ? { ...counts, readWhole: l.readWhole } : counts;
}

/**
 * Writes the record beside the caches, in the run's own scope (a pull request's records never count
 * as the default branch's). Written whole or not at all; a failure warns and the job goes on. A
 * read-only job writes none: its save has said why.
 */
export async function writeRunRecord(record: RunRecord, ctx: JobContext): Promise<string | null> {
  if (ctx.readOnly.why !== null) return null;
  const id = `${record.startedAt.replace(/[-:.]/g, "")}-${randomBytes(4).toString("hex")}`;
  const object = runObject(record.scope, record.prefix, id);
  try {
    await ctx.store.createIfAbsent(object, Buffer.from(JSON.stringify(record)));
    return object;
  } catch (e) {
    ctx.log.warn(`run record not written (the job goes on): ${(e as Error).message}`);
    return null;
  }
}

const DAY_MS = 86_400_000;

/** The run records in a store, newest first; unreadable ones (and ones dated after the store got them) are skipped and counted. */
export async function readRunRecords(
  store: Store,
  under = `${RUNS}/`,
): Promise<{ records: RunRecord[]; unreadable: number }> {
  const records: RunRecord[] = [];
  let unreadable = 0;
  for (const o of await store.list(under)) {
    const where = parseRunObject(o.name);
    if (!where) continue;
    try {
      const r = JSON.parse((await store.read(o.name))?.toString("utf8") ?? "null") as unknown;
      // A run said to start a day or more after the store received its record never ran (a forged
      // date would sit in every --since window forever).
      if (isRunRecord(r, where) && !(Date.parse(r.startedAt) > o.modified.getTime() + DAY_MS))
        records.push(r);
      else unreadable++;
    } catch {
      unreadable++;
    }
  }
  return { records: records.sort((a, b) => (a.startedAt < b.startedAt ? 1 : -1)), unreadable };
}

/**
 * Whether a record read from the store is one kcache wrote, checked as a manifest is: every field
 * stats and baselines read has its type (a `kernels: null` or `compiled: "many"` is not counted as
 * runs), and it is stored where its own scope and prefix say (a record under a pull request's scope
 * whose body says branch/main does not count as the default branch's).
 */
function isRunRecord(r: unknown, where: { scope: string; prefix: string }): r is RunRecord {
  const o = r as Record<string, unknown> | null;
  if (!o || typeof o !== "object" || o.schema !== RUN_RECORD_SCHEMA) return false;
  const num = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v >= 0;
  const numOrNull = (v: unknown) => v === null || num(v);
  const k = o.kernels as Record<string, unknown> | null;
  const timed = (v: unknown) =>
    v === null || (!!v && typeof v === "object" && num((v as { seconds?: unknown }).seconds));
  return (
    o.scope === where.scope &&
    o.prefix === where.prefix &&
    typeof o.key === "string" &&
    typeof o.startedAt === "string" &&
    !Number.isNaN(Date.parse(o.startedAt)) &&
    typeof o.passed === "boolean" &&
    ["exact", "prefix", "miss", "none"].includes(o.hit as string) &&
    num(o.seconds) &&
    !!k &&
    typeof k === "object" &&
    Number.isInteger(k.compiled) &&
    num(k.compiled) &&
    numOrNull(k.loaded) &&
    numOrNull(k.compileSeconds ?? null) &&
    timed(o.restore) &&
    timed(o.save) &&
    (o.jobSeconds === undefined || num(o.jobSeconds)) &&
    (o.lazy === undefined ||
      (!!o.lazy &&
        typeof o.lazy === "object" &&
        LAZY_FIELDS.every((f) => num((o.lazy as Record<string, unknown>)[f])) &&
        isReadWhole((o.lazy as Record<string, unknown>).readWhole, num))) &&
    (o.records === undefined || Array.isArray(o.records))
  );
}

/** A record's `lazy.readWhole`: absent, or a tally of whole numbers for reasons kcache knows. */
function isReadWhole(v: unknown, num: (x: unknown) => boolean): boolean {
  if (v === undefined) return true;
  if (!v || typeof v !== "object" || Array.isArray(v)) return false;
  return Object.entries(v).every(
    ([reason, t]) =>
      (WHOLE_REASONS as readonly string[]).includes(reason) &&
      !!t &&
      typeof t === "object" &&
      ["packs", "entries", "bytes"].every((f) => num((t as Record<string, unknown>)[f])),
  );
}
