import fs from "node:fs";
import path from "node:path";
import { tritonKind } from "../../kinds/triton.js";
import type { RestoreTarget } from "../../pack/pack-request.js";
import { readFramed } from "../../pack/read/framed-reader.js";
import { makeStaging } from "../../pack/read/staging-owner.js";
import type { Store } from "../../store/store.js";
import type { DeferredEntries, DeferredEntry } from "./deferred-entries.js";

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

/** A cache whose entries are looked up: its name and folder. */
export interface LookedUpCache {
  name: string;
  root: string;
}

/**
 * Serves a job's lookups of the entries a lazy restore left in the store: each fetched alone (a
 * ranged read of its frames), verified by its digest, relocated and placed atomically, where an
 * entry the job wrote meanwhile stays. The first lookup the store fails or stalls on gives the store
 * up for the job: later lookups answer at once, and the job compiles what it could not fetch.
 */
export class EntryFetcher {
  readonly stats: LookupStats = {
    onDemand: 0,
    notInKey: 0,
    failed: 0,
    withheld: 0,
    bytesRead: 0,
    waitSeconds: 0,
    storeDown: null,
  };
  private readonly inFlight = new Map<string, Promise<LookupAnswer>>();
  private readonly staging = new Map<string, string>();
  private readonly done = new Map<string, LookupAnswer>();
  private readonly roots: { name: string; root: string; real: string }[];
  readonly waitMs: number;

  constructor(
    private readonly store: Store,
    private readonly zstd: string,
    caches: LookedUpCache[],
    private readonly deferred: DeferredEntries,
  ) {
    this.roots = caches.map((c) => ({ ...c, real: realOr(c.root) }));
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
    if (!entry) {
      this.stats.notInKey++;
      return { placed: false, why: "not in the restored key" };
    }
    if (entry.withhold && file.endsWith(".autotune.json")) {
      this.stats.withheld++;
      return { placed: false, why: `autotune result withheld (${entry.withhold})` };
    }
    const id = `${cache}/${name}`;
    const known = this.done.get(id) ?? (await this.inFlight.get(id));
    if (known) return known;
    if (this.stats.storeDown) {
      this.stats.failed++;
      return { placed: false, why: `store given up on: ${this.stats.storeDown}` };
    }
    const fetching = this.fetch(cache, root, name, entry).finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, fetching);
    const answer = await fetching;
    this.done.set(id, answer);
    return answer;
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
    const abs = path.resolve(folder);
    const parent = path.dirname(abs);
    const name = path.basename(abs);
    const c = this.roots.find((r) => r.root === parent || r.real === parent || r.real === realOr(parent));
    if (!c || !tritonKind.isEntryName(name)) return null;
    return { cache: c.name, root: c.root, name, entry: this.deferred[c.name]?.[name] };
  }

  private async fetch(
    cache: string,
    root: string,
    name: string,
    entry: DeferredEntry,
  ): Promise<LookupAnswer> {
    const t0 = performance.now();
    const staging = this.stagingIn(root);
    const target: RestoreTarget = { kind: tritonKind, root, staging, keepExisting: true };
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.waitMs);
    });
    try {
      const read = readFramed({
        store: this.store,
        object: entry.object,
        run: [
          { cache, name, sha256: entry.sha256, size: entry.size, files: entry.files, frame: entry.frame },
        ],
        targets: new Map([[cache, target]]),
        zstd: this.zstd,
      });
      const r = await Promise.race([read, gaveUp]);
      if (r === null) {
        this.stats.storeDown = `no answer within ${Math.round(this.waitMs / 1000)} s (the idle timeout)`;
        this.stats.failed++;
        // The read goes on in the background: what it stages is discarded, or placed whole.
        return { placed: false, why: this.stats.storeDown };
      }
      this.stats.bytesRead += r.bytes;
      if (r.restored.length === 1) {
        this.stats.onDemand++;
        return { placed: true, why: "fetched" };
      }
      this.stats.failed++;
      const why = r.bad[0]?.reason ?? r.packError ?? "not placed";
      if (r.storeFault) this.stats.storeDown = r.packError ?? why;
      return { placed: false, why };
    } finally {
      clearTimeout(timer);
      this.stats.waitSeconds += (performance.now() - t0) / 1000;
    }
  }
}

function realOr(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}
