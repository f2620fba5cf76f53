import { inLanes } from "../../bounded-lanes.js";
import { formatBytes } from "../../format.js";
import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../../manifest/manifest.js";
import type { PackReadResult, RestoreTarget } from "../../pack/pack-request.js";
import { readPack, unreadPack } from "../../pack/read/pack-reader.js";
import { restoreOnThread } from "../../pack/threads/restore-on-thread.js";
import { ThreadPool, threadCount } from "../../pack/threads/thread-pool.js";
import type { JobContext } from "../job-context.js";

/** Packs read at once in this thread (their downloads overlap) when no worker threads are used. */
const PACK_CONCURRENCY = 4;
/** Below this many compressed bytes in all, starting threads costs more than it saves. */
const THREADS_ABOVE = 4 * 1024 * 1024;

export interface PackOutcome {
  refs: EntryRef[];
  result: PackReadResult;
}

/**
 * Reads every pack holding an entry to restore (not in `skip`), largest first, on worker threads
 * when there are several of some size (or $KCACHE_THREADS asks for them), else a few at once in this
 * thread. A pack that fails is an outcome like any other: its entries are reported bad, never thrown.
 */
export async function readPacks(
  ctx: JobContext,
  manifest: Manifest,
  targets: Map<string, RestoreTarget>,
  skip: Set<string>,
): Promise<{ results: PackOutcome[]; threads: number }> {
  const jobs = packJobs(manifest, targets, skip);
  const out: PackOutcome[] = [];
  const total = jobs.reduce((s, [i]) => s + (manifest.packs[i]?.size ?? 0), 0);
  const progress = ctx.progress?.("restoring", total);
  const asked = (ctx.runtime.threads ?? 0) > 1;
  const threads =
    jobs.length > 1 && (total > THREADS_ABOVE || asked)
      ? threadCount(jobs.length, ctx.runtime.threads, total)
      : 0;
  // This thread reads packs too (a local store's, whose reads yield to the event loop between
  // pieces), so n threads take n - 1 workers: each worker costs ~16 MB.
  const mainReads = ctx.store.localFile !== undefined;
  const pool = threads > 1 ? ThreadPool.open(mainReads ? threads - 1 : threads) : null;
  const onBytes = (n: number) => progress?.add(n);
  try {
    const lanes = pool ? threads : Math.min(PACK_CONCURRENCY, jobs.length);
    await inLanes(jobs, lanes, async ([packIndex, refs], lane) => {
      const pack = manifest.packs[packIndex];
      if (!pack) return;
      const onThread = pool !== null && !(mainReads && lane === 0);
      out.push({
        refs,
        result: await readOnePack(ctx, { pack, refs, targets, pool: onThread ? pool : null, onBytes }),
      });
    });
  } finally {
    progress?.done();
    await pool?.close();
  }
  return { results: out, threads: pool ? threads : 0 };
}

/** The packs to read with the entries wanted from each, largest pack first (so threads finish together). */
function packJobs(
  manifest: Manifest,
  targets: Map<string, RestoreTarget>,
  skip: Set<string>,
): [number, EntryRef[]][] {
  const byPack = new Map<number, EntryRef[]>();
  for (const e of manifest.entries) {
    if (!targets.has(e.cache) || skip.has(entryId(e))) continue;
    const list = byPack.get(e.pack) ?? [];
    list.push(e);
    byPack.set(e.pack, list);
  }
  return [...byPack.entries()].sort(
    (a, b) => (manifest.packs[b[0]]?.size ?? 0) - (manifest.packs[a[0]]?.size ?? 0),
  );
}

/** One pack to read: the entries wanted from it, where they go, and the pool to read it on (none: here). */
interface OnePack {
  pack: Manifest["packs"][number];
  refs: EntryRef[];
  targets: Map<string, RestoreTarget>;
  pool: ThreadPool | null;
  onBytes: (n: number) => void;
}

async function readOnePack(ctx: JobContext, one: OnePack): Promise<PackReadResult> {
  const t0 = performance.now();
  const r = await readOnePackTimed(ctx, one);
  ctx.log.debug(
    `pack ${one.pack.object}: ${formatBytes(one.pack.size)}, ${r.restored.length} of ${one.refs.length} entries written in ${((performance.now() - t0) / 1000).toFixed(2)} s${r.packError ? ` (${r.packError})` : ""}`,
  );
  return r;
}

async function readOnePackTimed(
  ctx: JobContext,
  { pack, refs, targets, pool, onBytes }: OnePack,
): Promise<PackReadResult> {
  const zstd = ctx.runtime.zstd;
  try {
    if (pool)
      return await restoreOnThread({
        pool,
        store: ctx.store,
        object: pack.object,
        pack,
        wanted: refs,
        targets,
        zstd,
        onBytes,
      });
    const file = ctx.store.localFile?.(pack.object);
    const from = file ? { file } : await ctx.store.get(pack.object, pack.size);
    return await readPack({ from, pack, wanted: refs, targets, zstd, onBytes });
  } catch (e) {
    return unreadPack(refs, "pack unreadable", e as Error);
  }
}
