import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import type { FoundEntry } from "../../kinds/kind.js";
import { scanEntryAt, tritonKind } from "../../kinds/triton.js";
import { writePack } from "../../pack/write/pack-writer.js";
import { liveObjects } from "../../store/layout.js";
import type { JobContext } from "../job-context.js";
import { CacheLocator, type LookedUpCache } from "./cache-locator.js";
import type { LiveRecord } from "./live-record.js";

/** An entry stops changing this long after its last write (Triton writes the group file last). */
const SETTLE_MS = 300;
/** At the job's end, how long a file's line from the hook is waited for. */
const FLUSH_WAIT_MS = 2000;
/** The most entries whose written files are remembered (a job's lines are its own to choose). */
const MAX_WRITTEN_ENTRIES = 100_000;

/**
 * Shares each entry the job's processes complete (store.live): once it settles and is complete, it
 * is packed alone and written under the job's write scope as `live/<scope>/<stack>/<cache>/<entry>`,
 * then its record (digest, sizes) is written beside it, so a reader never finds a record without
 * its pack. Autotune results are never shared live: a winner is timing, whose producer a key records.
 * A failed upload is counted, never the job's failure; after one, the store is given up on for
 * the rest of the job (each later entry is counted as not shared, and nothing waits on the store).
 */
export class LiveWriter {
  readonly stats = { written: 0, failed: 0 };
  /** Why the store was given up on for live uploads, once one failed. */
  private down: string | null = null;
  /** Entry folders written into lately, by cache and name, each waiting to settle on its timer. */
  private readonly settling = new Map<
    string,
    { cache: LookedUpCache; name: string; timer: NodeJS.Timeout }
  >();
  private readonly uploads = new Set<Promise<void>>();
  private readonly sent = new Set<string>();
  /** Entries refused or trimmed for links (said once each). */
  private readonly refused = new Set<string>();
  private readonly locator: CacheLocator;
  /** Entry (cache and name) -> file -> the digest the job's process wrote it with (the hook's word), bounded. */
  private readonly written = new Map<string, Map<string, string>>();
  /** The job ended: what settles is shared now, a file's late line waited for a moment. */
  private flushing = false;

  constructor(
    private readonly ctx: JobContext,
    caches: LookedUpCache[],
  ) {
    this.locator = new CacheLocator(caches);
  }

  /**
   * A process of the job wrote into the entry folder `folder` (the file `file` with digest `sha256`,
   * as the hook saw it written): share it once it settles, while every file is as the job wrote it.
   */
  wrote(folder: string, file?: string, sha256?: string): void {
    const at = this.locator.locate(folder);
    if (!at) return;
    const id = `${at.cache.name}\0${at.name}`;
    if (file && sha256 && !file.includes("/") && this.written.size < MAX_WRITTEN_ENTRIES) {
      const files = this.written.get(id) ?? new Map<string, string>();
      if (files.size < 256) files.set(file, sha256);
      this.written.set(id, files);
    }
    clearTimeout(this.settling.get(id)?.timer);
    const timer = setTimeout(() => {
      this.settling.delete(id);
      this.track(this.upload(at.cache, at.name));
    }, SETTLE_MS);
    this.settling.set(id, { ...at, timer });
  }

  /** Shares what settles now and waits for every upload under way (each bounded by the store's idle timeout). */
  async flush(): Promise<void> {
    this.flushing = true;
    for (const { cache, name, timer } of this.settling.values()) {
      clearTimeout(timer);
      this.track(this.upload(cache, name));
    }
    this.settling.clear();
    await Promise.all([...this.uploads]);
  }

  /**
   * The entry as a save would take it from the cache (Triton's scan, read alone): a link where its
   * folder should be is refused, as are links and other non-files in it (left out), so nothing the
   * job points at outside the cache is ever uploaded. Null when there is none (a refusal said once).
   */
  private entryAsSaved(cache: LookedUpCache, name: string): FoundEntry | null {
    const tally = { tempDirs: 0, lockFiles: 0, localFiles: 0, otherFiles: 0 };
    let entry: FoundEntry | null;
    try {
      entry = scanEntryAt(cache.root, name, tally);
    } catch {
      return null;
    }
    if (tally.otherFiles && !this.refused.has(`${cache.name}/${name}`)) {
      this.refused.add(`${cache.name}/${name}`);
      this.ctx.log.warn(
        entry
          ? `live: ${cache.name}/${name}: ${tally.otherFiles} links or other non-files in its folder left out, as a save leaves them`
          : `live: ${cache.name}/${name} refused: not a folder in the cache (a link, or a file), which a save refuses too`,
      );
    }
    return entry?.files.length ? entry : null;
  }

  /**
   * Whether every file of the entry holds the bytes the hook saw the job's processes write: "as-written",
   * "missing" (a file whose write the hook has not told of yet: its line may still be on its way), or
   * "differs" (another process wrote or changed it since).
   */
  private asWritten(
    cache: LookedUpCache,
    name: string,
    entry: FoundEntry,
  ): "as-written" | "missing" | "differs" {
    const digests = this.written.get(`${cache.name}\0${name}`);
    for (const f of entry.files) {
      const want = digests?.get(f.rel);
      if (!want) return "missing";
      try {
        const got = createHash("sha256")
          .update(fs.readFileSync(path.join(cache.root, name, f.rel)))
          .digest("hex");
        if (got !== want) return "differs";
      } catch {
        return "differs";
      }
    }
    return "as-written";
  }

  /**
   * The entry's files as the job wrote them; at the job's end (flush) a file whose line has not come
   * yet is waited for a moment (the job's last writes and kcache's end race: broken-live.test.ts).
   */
  private async writtenByJob(cache: LookedUpCache, name: string, entry: FoundEntry): Promise<boolean> {
    let state = this.asWritten(cache, name, entry);
    for (let waited = 0; state === "missing" && this.flushing && waited < FLUSH_WAIT_MS; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      state = this.asWritten(cache, name, entry);
    }
    if (state === "as-written") return true;
    this.ctx.log.debug(
      `live: ${cache.name}/${name} not shared: ${state === "missing" ? "a file the hook never said this job wrote" : "a file is not as this job's processes wrote it"} (the hook's record)`,
    );
    return false;
  }

  private track(p: Promise<void>): void {
    this.uploads.add(p);
    void p.finally(() => this.uploads.delete(p));
  }

  /** Never rejects: an upload runs on a timer, where a rejection would end kcache. */
  private async upload(cache: LookedUpCache, name: string): Promise<void> {
    try {
      await this.uploadEntry(cache, name);
    } catch (err) {
      this.ctx.log.debug(`live: ${cache.name}/${name} not shared: ${(err as Error).message}`);
    }
  }

  private async uploadEntry(cache: LookedUpCache, name: string): Promise<void> {
    const entry = this.entryAsSaved(cache, name);
    if (
      !entry ||
      tritonKind.incompleteReason(cache.root, entry) !== null ||
      tritonKind.isAutotuneResult(entry)
    )
      return;
    // Shared only as the job's own processes wrote it: a file another process wrote or changed since
    // (through the runner's shared folder) keeps the entry out of every live scope.
    if (!(await this.writtenByJob(cache, name, entry))) return;
    const sig = entry.files.map((f) => `${f.rel}:${f.size}:${f.mtimeMs}`).join("|");
    if (this.sent.has(`${name}|${sig}`)) return;
    this.sent.add(`${name}|${sig}`);
    if (this.down) {
      this.stats.failed++;
      return;
    }
    const { ctx } = this;
    const objects = liveObjects(ctx.scopes.write, ctx.stack.stackId, cache.name, name);
    try {
      const w = await writePack({
        store: ctx.store,
        object: objects.pack,
        inputs: [{ cache: cache.name, kind: tritonKind.kind, root: cache.root, entry }],
        level: 3,
        zstd: ctx.runtime.zstd,
      });
      const e = w.entries[0];
      if (!e) return;
      const record: LiveRecord = {
        format: "kcache-live/1",
        cache: cache.name,
        name,
        sha256: e.sha256,
        size: e.size,
        files: e.files,
        packBytes: w.size,
        key: ctx.key,
        at: new Date().toISOString(),
      };
      await ctx.store.put(objects.record, Readable.from([Buffer.from(JSON.stringify(record))]));
      this.stats.written++;
    } catch (err) {
      this.stats.failed++;
      this.down ??= (err as Error).message;
      ctx.log.debug(`live: ${cache.name}/${name} not shared: ${(err as Error).message}`);
    }
  }
}
