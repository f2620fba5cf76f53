import { formatBytes } from "../../format.js";
import type { JobContext } from "../job-context.js";
import type { LocalState } from "../local-state.js";
import { deferredTally } from "./deferred-entries.js";
import { EntryFetcher, type LookupStats } from "./entry-fetcher.js";
import { LookupServer } from "./lookup-server.js";

/** What a lazy restore and the job's lookups came to (the run report's `lazy`, `kcache stats`). */
export interface LazyReport extends LookupStats {
  /** Entries placed before the job because recent jobs used them. */
  prefetched: number;
  /** Entries the restore left in the store. */
  deferred: number;
  /** Of those, entries the job never looked up. */
  neverFetched: number;
}

/** The variables that point a command's Python processes (kcache's hook) at the job's lookups. */
export interface LookupEnv {
  KCACHE_LAZY_SOCKET: string;
  /** Seconds the hook waits for an answer: the store's idle timeout, and a little for the placing. */
  KCACHE_LAZY_WAIT: string;
}

/**
 * The lookups of a job whose restore left entries in the store (restore: lazy): served from the
 * start of its commands to their end, in this process.
 */
export class JobLookups {
  private constructor(
    private readonly fetcher: EntryFetcher,
    private readonly server: LookupServer,
    private readonly deferred: number,
  ) {}

  /** Starts serving when the restore left entries in the store; null when it left none. */
  static async start(ctx: JobContext, state: LocalState | null): Promise<JobLookups | null> {
    const deferred = state?.job?.deferred;
    if (!deferred || deferredTally(deferred).entries === 0) return null;
    const caches = ctx.caches.filter((c) => deferred[c.name]).map((c) => ({ name: c.name, root: c.path }));
    const fetcher = new EntryFetcher(ctx.store, ctx.runtime.zstd, caches, deferred);
    const server = await LookupServer.start(fetcher);
    ctx.log.debug(
      `serving lookups of ${deferredTally(deferred).entries} deferred entries at ${server.socket}`,
    );
    return new JobLookups(fetcher, server, deferredTally(deferred).entries);
  }

  env(): LookupEnv {
    return {
      KCACHE_LAZY_SOCKET: this.server.socket,
      KCACHE_LAZY_WAIT: String(Math.ceil(this.fetcher.waitMs / 1000) + 5),
    };
  }

  private stopped: Promise<void> | null = null;

  /** Stops serving; what the lookups came to. */
  async stop(prefetched: number): Promise<LazyReport> {
    this.stopped ??= this.server.stop().finally(() => this.fetcher.close());
    await this.stopped;
    const s = this.fetcher.stats;
    return { ...s, prefetched, deferred: this.deferred, neverFetched: this.deferred - s.onDemand };
  }
}

/** One line for people: what the job fetched and what it waited. */
export function lazyLine(r: LazyReport): string {
  const down = r.storeDown
    ? `; the store was given up on (${r.storeDown}): the job compiled what it could not fetch`
    : "";
  return `lazy restore: ${r.prefetched} entries fetched ahead, ${r.onDemand} fetched when looked up (${formatBytes(r.bytesRead)}, ${r.waitSeconds.toFixed(2)} s waited), ${r.neverFetched} of ${r.deferred} never needed${r.failed ? `, ${r.failed} lookups not served` : ""}${r.withheld ? `, ${r.withheld} autotune results withheld` : ""}${down}`;
}
