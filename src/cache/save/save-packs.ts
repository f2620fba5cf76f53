import { inLanes } from "../../bounded-lanes.js";
import { formatBytes } from "../../format.js";
import { saveThreads, ThreadPool } from "../../pack/threads/thread-pool.js";
import { type BuildInput, type WrittenPack, writePack } from "../../pack/write/pack-writer.js";
import { formId, type StoredForms } from "../../pack/write/stored-forms.js";
import { zstdEngine } from "../../pack/zstd/engines.js";
import { packObject } from "../../store/layout.js";
import type { JobContext } from "../job-context.js";
import type { Present } from "./save-scan.js";

/**
 * A save's write phase: one pack per group, in parallel over threads (saveThreads), each built,
 * hashed and compressed on the way to the store. After a failure no further pack is started and the
 * packs already written are deleted: the save fails as a whole.
 */
export async function writePacks(
  ctx: JobContext,
  groups: Present[][],
  leaseId: string,
  forms: StoredForms,
): Promise<WrittenPack[]> {
  // No Zstandard engine (ZstdUnavailableError, naming the fix) fails the save before any upload.
  await zstdEngine(ctx.runtime.zstd);
  // Pickles not yet rewritten (for hashing) are, all in one process in the background: packs that
  // hold none are built meanwhile, those that do once it is done.
  const rewrites = forms.prepareInBackground(groups.flat());
  const waits = groups.map((g) => g.some((p) => rewrites.waiting.has(formId(p.root, p.entry))));
  const order = groups.map((_, i) => i).sort((a, b) => Number(waits[a]) - Number(waits[b]));
  const slots: (WrittenPack | undefined)[] = new Array(groups.length);
  const written = () => slots.filter((w): w is WrittenPack => w !== undefined);
  const progress = ctx.progress?.("uploading", null);
  const bytes = groups.reduce((n, g) => n + g.reduce((m, p) => m + p.size, 0), 0);
  const { threads, zstd } = saveThreads(groups.length, ctx.runtime.threads, bytes);
  const pool = threads > 1 ? ThreadPool.open(threads) : null;
  const lazy = new Set(ctx.caches.filter((c) => c.lazy).map((c) => c.name));
  try {
    await inLanes(
      order,
      pool ? threads : 1,
      async (i) => {
        const group = groups[i] as Present[];
        if (waits[i]) await rewrites.written;
        const inputs: BuildInput[] = group.map((p) => ({
          cache: p.cache,
          kind: p.kind.kind,
          root: p.root,
          entry: p.entry,
          stored: forms.of(p.root, p.entry),
        }));
        const t0 = performance.now();
        slots[i] = await writePack({
          store: ctx.store,
          object: packObject(ctx.scopes.write, `${leaseId}-${i}`),
          inputs,
          level: ctx.save.compressionLevel,
          zstd: ctx.runtime.zstd,
          onBytes: (n) => progress?.add(n),
          pool,
          zstdThreads: zstd,
          // A lazily restored cache's entries are read alone: each in frames of its own.
          frames: group.some((p) => lazy.has(p.cache)),
        });
        const w = slots[i];
        ctx.log.debug(
          `pack ${w.object}: ${w.entries.length} entries, ${formatBytes(w.entryBytes)} in ${formatBytes(w.size)}, written in ${((performance.now() - t0) / 1000).toFixed(2)} s`,
        );
      },
      { stopOnFailure: true },
    );
  } catch (e) {
    await rewrites.written;
    await deletePacks(ctx.store, written());
    throw e;
  } finally {
    progress?.done();
    await pool?.close();
  }
  return written();
}

/** Deletes packs this save wrote and will not reference (best effort: prune reaps what stays). */
export async function deletePacks(store: JobContext["store"], written: WrittenPack[]): Promise<void> {
  await Promise.all(written.map((w) => store.delete(w.object).catch(() => {})));
}
