import fs from "node:fs";
import { tritonKind } from "../../kinds/triton.js";
import type { Log } from "../../log.js";
import type { RestoreTarget } from "../../pack/pack-request.js";
import { type FramedEntry, readFramed } from "../../pack/read/framed-reader.js";
import { makeStaging } from "../../pack/read/staging-owner.js";
import { liveObjects } from "../../store/layout.js";
import { isObjectFault, type Store } from "../../store/store.js";
import { CacheLocator, type LookedUpCache } from "./cache-locator.js";
import type { DeferredEntries } from "./deferred-entries.js";
import { liveEntryOf, MAX_LIVE_RECORD } from "./live-record.js";

/** Where live entries are looked for (store.live): the scopes this job may read, in order, and its stack. */
export interface LiveReading {
  scopes: string[];
  stackId: string;
}

const GAVE_UP = Symbol("gave up");

/** A local store has no idle timeout of its own: a lookup waits at most this long on it. */
const LOCAL_WAIT_MS = 30_000;

/** What a job's lookups of deferred entries came to (the job report's `lazy`, `kcache stats`). */
export interface LookupStats {
  /** Entries fetched alone from the store and placed. */
  onDemand: number;
  /** Lookups of entries the key does not hold (the job compiles them). */
  notInKey: number;
  /** Lookups that did not place the entry: the store failed, stalled, or the entry did not verify. */
  failed: number;
  /** Autotune results the profile's policy withholds, asked for and refused. */
  withheld: number;
  /** Entries not in the key that another job shared live (store.live), fetched and placed. */
  live: number;
  /** Compressed bytes read for on-demand entries. */
  bytesRead: number;
  /** Time lookups spent waiting on the store, in all. */
  waitSeconds: number;
  /** Why the store was given up on for the rest of the job, if it was. */
  storeDown: string | null;
}

export interface LookupAnswer {
  placed: boolean;
  why: string;
}

export type { LookedUpCache } from "./cache-locator.js";

/**
 * Serves a job's lookups of the entries a lazy restore left in the store: each fetched alone (a
 * ranged read of its frames), verified by its digest, relocated and placed atomically, where an
 * entry the job wrote meanwhile stays. The first lookup the store fails or stalls on gives the store
 * up for the job: later lookups answer at once, and the job compiles what it could not fetch.
 */
export class EntryFetcher {
  readonly stats: LookupStats = {
    onDemand: 0,
    live: 0,
    notInKey: 0,
    failed: 0,
    withheld: 0,
    bytesRead: 0,
    waitSeconds: 0,
    storeDown: null,
  };
  private readonly inFlight = new Map<string, Promise<LookupAnswer>>();
  private readonly staging = new Map<string, string>();
  /** Entries placed from other jobs' live objects ("cache/name"): a save never makes them part of a key. */
  readonly liveFetched: string[] = [];
  private readonly done = new Map<string, LookupAnswer>();
  /** Refusals said to the log. */
  private readonly told = new Set<string>();
  private readonly locator: CacheLocator;
  readonly waitMs: number;

  constructor(
    private readonly store: Store,
    private readonly zstd: string,
    caches: LookedUpCache[],
    private readonly deferred: DeferredEntries,
    private readonly live: LiveReading | null = null,
    /** Where a refused object is said (once each): it is damaged, or was pruned under the lookup. */
    private readonly log: Pick<Log, "warn"> | null = null,
  ) {
    this.locator = new CacheLocator(caches);
    this.waitMs = store.idleTimeoutMs ?? LOCAL_WAIT_MS;
  }

  /** The entry folder `folder` (as the job's cache manager names it), for the lookup of `file` in it. */
  async lookup(folder: string, file = ""): Promise<LookupAnswer> {
    const where = this.locate(folder);
    if (!where) {
      this.stats.notInKey++;
      return { placed: false, why: "not an entry of a lazily restored cache" };
    }
    const { cache, root, name, entry } = where;
    const autotune = file.endsWith(".autotune.json");
    if (entry?.withhold && autotune) {
      this.stats.withheld++;
      return { placed: false, why: `autotune result withheld (${entry.withhold})` };
    }
    // Not in the key: shared live by another job, perhaps (never an autotune result: a key records who tuned it).
    if (!entry && (this.live === null || autotune)) {
      this.stats.notInKey++;
      return { placed: false, why: "not in the restored key" };
    }
    const id = `${cache}/${name}`;
    const known = this.done.get(id) ?? (await this.inFlight.get(id));
    if (known) return known;
    if (this.stats.storeDown) {
      this.stats.failed++;
      return { placed: false, why: `store given up on: ${this.stats.storeDown}` };
    }
    const t0 = performance.now();
    const fetching = (
      entry
        ? this.fetch(root, entry.object, { cache, name, ...entry }).then((a) => this.counted(a, "onDemand"))
        : this.fetchLive(cache, root, name)
    ).finally(() => {
      this.inFlight.delete(id);
      this.stats.waitSeconds += (performance.now() - t0) / 1000;
    });
    this.inFlight.set(id, fetching);
    const answer = await fetching;
    this.done.set(id, answer);
    return answer;
  }

  private counted(a: LookupAnswer, as: "onDemand" | "live"): LookupAnswer {
    if (a.placed) this.stats[as]++;
    else this.stats.failed++;
    return a;
  }

  /** An entry another job shared live, from the scopes this job may read, in order (its own first). */
  private async fetchLive(cache: string, root: string, name: string): Promise<LookupAnswer> {
    const live = this.live as LiveReading;
    for (const scope of live.scopes) {
      const objects = liveObjects(scope, live.stackId, cache, name);
      let data: Buffer | null | typeof GAVE_UP;
      try {
        data = await this.withinWait(this.store.read(objects.record, MAX_LIVE_RECORD));
      } catch (e) {
        // A record that is not a file, or too large to be one, is refused alone; a failing store is given up on.
        if (isObjectFault(e)) return this.refused(`live record refused: ${(e as Error).message}`);
        return this.storeFailed((e as Error).message);
      }
      if (data === GAVE_UP) return this.storeFailed(this.timedOut());
      if (data === null) continue;
      const wanted = liveEntryOf(data, cache, name);
      if (!wanted)
        return this.refused(`live record ${objects.record} is not this entry's, or too large: refused`);
      const a = this.counted(await this.fetch(root, objects.pack, wanted), "live");
      if (a.placed) this.liveFetched.push(`${cache}/${name}`);
      return a;
    }
    this.stats.notInKey++;
    return { placed: false, why: "neither in the restored key nor shared live" };
  }

  /** This entry alone is not placed (its objects are damaged or missing): the job compiles it. */
  private refused(why: string): LookupAnswer {
    this.stats.failed++;
    this.said(why);
    return { placed: false, why };
  }

  /** Says a refusal once (at most 20 in a job: a store full of damaged objects is one story). */
  private said(why: string): void {
    if (this.told.has(why) || this.told.size >= 20) return;
    this.told.add(why);
    this.log?.warn(`lookup refused (the job compiles that kernel): ${why}`);
  }

  private storeFailed(why: string): LookupAnswer {
    this.stats.storeDown = why;
    this.stats.failed++;
    return { placed: false, why };
  }

  private timedOut(): string {
    return `no answer within ${Math.round(this.waitMs / 1000)} s (the idle timeout)`;
  }

  /** `p`, or GAVE_UP once the wait is over (what `p` then does is not waited for). */
  private async withinWait<T>(p: Promise<T>): Promise<T | typeof GAVE_UP> {
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<typeof GAVE_UP>((resolve) => {
      timer = setTimeout(() => resolve(GAVE_UP), this.waitMs);
    });
    try {
      return await Promise.race([p, gaveUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One staging folder per cache for the job's fetches (each entry stages in a folder of its own there). */
  private stagingIn(root: string): string {
    let dir = this.staging.get(root);
    if (!dir) {
      dir = makeStaging(root);
      this.staging.set(root, dir);
    }
    return dir;
  }

  /** Removes the staging folders (what a fetch still under way stages there is lost, never placed half). */
  close(): void {
    for (const dir of this.staging.values()) fs.rmSync(dir, { recursive: true, force: true });
    this.staging.clear();
  }

  private locate(folder: string) {
    const at = this.locator.locate(folder);
    if (!at) return null;
    const { cache, name } = at;
    return { cache: cache.name, root: cache.root, name, entry: this.deferred[cache.name]?.[name] };
  }

  /** Fetches one entry alone (a ranged read of `wanted.frame` in `object`), verifies it and places it whole. */
  private async fetch(root: string, object: string, wanted: FramedEntry): Promise<LookupAnswer> {
    const target: RestoreTarget = {
      kind: tritonKind,
      root,
      staging: this.stagingIn(root),
      keepExisting: true,
    };
    const read = readFramed({
      store: this.store,
      object,
      run: [wanted],
      targets: new Map([[wanted.cache, target]]),
      zstd: this.zstd,
    });
    // On a timeout the read goes on in the background: what it stages is discarded, or placed whole.
    const r = await this.withinWait(read);
    if (r === GAVE_UP) {
      this.stats.storeDown = this.timedOut();
      return { placed: false, why: this.stats.storeDown };
    }
    this.stats.bytesRead += r.bytes;
    if (r.restored.length === 1) return { placed: true, why: "fetched" };
    const why = r.bad[0]?.reason ?? r.packError ?? "not placed";
    if (r.storeFault) this.stats.storeDown = r.packError ?? why;
    else this.said(`${object}: ${r.packError ?? why}`);
    return { placed: false, why };
  }
}
