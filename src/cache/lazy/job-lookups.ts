import { formatBytes } from "../../format.js";
import { cacheKind } from "../../kinds/registry.js";
import type { JobContext } from "../job-context.js";
import { type LocalState, writeState } from "../local-state.js";
import { deferredTally } from "./deferred-entries.js";
import { EntryFetcher, type LookupStats } from "./entry-fetcher.js";
import { type ReadWhole, wholeWords } from "./lazy-plan.js";
import { LiveWriter } from "./live-writer.js";
import { LookupServer } from "./lookup-server.js";

/** What a lazy restore and the job's lookups came to (the run report's `lazy`, `kcache stats`). */
export interface LazyReport extends LookupStats {
  /** Entries placed before the job because recent jobs used them. */
  prefetched: number;
  /** Entries the restore left in the store. */
  deferred: number;
  /** Of those, entries the job never looked up. */
  neverFetched: number;
  /** Entries the job compiled and shared live (store.live). */
  liveWritten: number;
  /** Entries the job compiled that were not shared live: the store failed (then no later one is tried). */
  liveFailed: number;
  /** Seconds the end of the job waited for live uploads under way (each bounded by the store's idle timeout). */
  liveFlushSeconds: number;
  /** The restore's packs read whole, by reason (lazy-plan.ts): what the job got before it started, not by lookups. */
  readWhole?: ReadWhole;
}

/** The variables that point a command's Python processes (kcache's hook) at the job's lookups. */
export interface LookupEnv {
  KCACHE_LAZY_SOCKET: string;
  /** Seconds the hook waits for an answer: the store's idle timeout, and a little for the placing. */
  KCACHE_LAZY_WAIT: string;
  /** Set when the hook should tell kcache of each entry the job writes (store.live). */
  KCACHE_LIVE?: string;
}

/**
 * The lookups of a job whose restore left entries in the store (restore: lazy), or whose store shares
 * entries live (store.live): served from the start of its commands to their end, in this process.
 */
export class JobLookups {
  private stopped: Promise<void> | null = null;
  private flushSeconds = 0;

  private constructor(
    private readonly ctx: JobContext,
    /** The restore's state, which the save reads (the same object: what stop records, the save sees). */
    private readonly state: LocalState | null,
    private readonly fetcher: EntryFetcher,
    private readonly writer: LiveWriter | null,
    private readonly server: LookupServer,
    private readonly deferred: number,
  ) {}

  /**
   * Starts serving when the restore left entries in the store or the store is live; null otherwise.
   * `onStop`: served in a process of its own (lookup-daemon.ts), what answers the request to stop.
   */
  static async start(
    ctx: JobContext,
    state: LocalState | null,
    onStop?: () => Promise<unknown>,
  ): Promise<JobLookups | null> {
    const deferred = state?.job?.deferred ?? {};
    const count = deferredTally(deferred).entries;
    if (count === 0 && !ctx.live) return null;
    // Live: every Triton cache of the job (a kernel not in its key may have been shared); else the lazy ones.
    const caches = ctx.caches
      .filter(
        (c) => deferred[c.name] || (ctx.live && (c.kind === "auto" || cacheKind(c.kind).lookupsSeenByHook)),
      )
      .map((c) => ({ name: c.name, root: c.path }));
    const live = ctx.live ? { scopes: ctx.scopes.read, stackId: ctx.stack.stackId } : null;
    const fetcher = new EntryFetcher(ctx.store, ctx.runtime.zstd, caches, deferred, live, ctx.log);
    const writer = ctx.live ? new LiveWriter(ctx, caches) : null;
    const server = await LookupServer.start(fetcher, writer, onStop);
    ctx.log.debug(
      `serving lookups (${count} deferred entries${ctx.live ? ", live" : ""}) at ${server.socket}`,
    );
    return new JobLookups(ctx, state, fetcher, writer, server, count);
  }

  env(): LookupEnv {
    return {
      KCACHE_LAZY_SOCKET: this.server.socket,
      KCACHE_LAZY_WAIT: String(Math.ceil(this.fetcher.waitMs / 1000) + 5),
      ...(this.writer ? { KCACHE_LIVE: "1" } : {}),
    };
  }

  /**
   * Stops serving, shares what the job completed last, and records in the local state the entries
   * placed from other jobs' live objects (a save leaves them out of the key); what the lookups came to.
   */
  async stop(prefetched: number): Promise<LazyReport> {
    this.stopped ??= this.server
      .stop()
      .then(async () => {
        const t0 = performance.now();
        await this.writer?.flush();
        this.flushSeconds = (performance.now() - t0) / 1000;
      })
      .finally(() => {
        this.fetcher.close();
        recordLiveFetched(this.ctx, this.state, this.fetcher.liveFetched);
      });
    await this.stopped;
    const s = this.fetcher.stats;
    return {
      ...s,
      prefetched,
      deferred: this.deferred,
      neverFetched: this.deferred - s.onDemand,
      liveWritten: this.writer?.stats.written ?? 0,
      liveFailed: this.writer?.stats.failed ?? 0,
      liveFlushSeconds: this.flushSeconds,
    };
  }
}

/** The report of a lazy restore that left nothing in the store: every entry it wanted came ahead. */
export function allFetchedAhead(prefetched: number): LazyReport {
  return {
    prefetched,
    deferred: 0,
    neverFetched: 0,
    liveWritten: 0,
    liveFailed: 0,
    liveFlushSeconds: 0,
    onDemand: 0,
    notInKey: 0,
    failed: 0,
    withheld: 0,
    live: 0,
    bytesRead: 0,
    waitSeconds: 0,
    storeDown: null,
  };
}

/** Notes in the state the save reads which entries came from other jobs' live objects. */
function recordLiveFetched(ctx: JobContext, state: LocalState | null, ids: string[]): void {
  if (!ids.length || !state?.job) return;
  const live: Record<string, string[]> = state.job.liveFetched ?? {};
  for (const id of ids) {
    const [cache, ...rest] = id.split("/");
    live[cache as string] = [...(live[cache as string] ?? []), rest.join("/")];
  }
  state.job.liveFetched = live;
  writeState(ctx.stateFile, state, ctx.log);
}

/** One line for people: what the job fetched and what it waited. */
export function lazyLine(r: LazyReport): string {
  const down = r.storeDown
    ? `; the store was given up on (${r.storeDown}): the job compiled what it could not fetch`
    : "";
  const fetched = `${formatBytes(r.bytesRead)}, ${r.waitSeconds.toFixed(2)} s waited`;
  const refused = `${r.failed ? `, ${r.failed} lookups not served` : ""}${r.withheld ? `, ${r.withheld} autotune results withheld` : ""}`;
  const live = `live: ${r.live} entries found shared by other jobs, ${r.liveWritten} shared${r.liveFailed ? `, ${r.liveFailed} not shared (the store failed)` : ""}`;
  const whole = wholeWords(r.readWhole);
  // A job whose restore left nothing in the store (store.live alone) has no lazy restore to speak of.
  if (r.prefetched === 0 && r.deferred === 0 && !whole) return `${live} (${fetched})${refused}${down}`;
  return `lazy restore: ${r.prefetched} entries fetched ahead, ${r.onDemand} fetched when looked up (${fetched}), ${r.neverFetched} of ${r.deferred} never needed${whole ? `; packs read whole: ${whole}` : ""}${refused}${r.live || r.liveWritten || r.liveFailed ? `; ${live}` : ""}${down}`;
}
