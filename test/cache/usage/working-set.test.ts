import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { decodeManifest, encodeManifest } from "../../../src/manifest/manifest.js";
import { manifestObject } from "../../../src/store/layout.js";
import { localStore } from "../../../src/store/local.js";
import { type CommitResult, simulateHistory } from "../../fixtures/kernel-history.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { relatimeFolder, tempRecordsReads } from "../../helpers/atime.js";
import { tempDir } from "../../helpers/sandbox.js";
import { storeContext } from "../../helpers/store-context.js";
import { canMountTmpfs, mountTmpfs } from "../../helpers/tmpfs.js";

const last = (h: CommitResult[]) => h[h.length - 1] as CommitResult;
const ratio = (c: CommitResult) => c.restoredBytes / c.liveBytes;
const recompiled = (h: CommitResult[]) => h.reduce((n, c) => n + c.recompiled, 0);
const HISTORY = { commits: 16, kernels: 80, churn: 0.05, kernelBytes: 6000 };

describe("working-set caches: a key holds what the job uses, not its history", () => {
  it.skipIf(!tempRecordsReads && !canMountTmpfs)(
    "with the defaults, learns use from access times alone and keeps the restored key within 1.25x of the working set, recompiling nothing",
    async () => {
      const work = tempDir("ws");
      const runners = relatimeFolder() as string;
      const h = await simulateHistory({
        work,
        runners,
        store: localStore(path.join(work, "store")),
        ...HISTORY,
      });
      expect(last(h).save.usage.source).toBe("atime");
      expect(h.reduce((n, c) => n + c.save.usage.evicted.entries, 0)).toBeGreaterThan(0);
      expect(ratio(last(h))).toBeLessThanOrEqual(1.25);
      expect(recompiled(h)).toBe(0);
    },
  );

  it("without eviction the same history grows past 1.5x (what kcache did before, and what actions/cache keeps)", async () => {
    const work = tempDir("ws");
    const h = await simulateHistory({
      work,
      store: localStore(path.join(work, "store")),
      ...HISTORY,
      save: { "keep-unused": { runs: 0, days: 0 } },
    });
    expect(ratio(last(h))).toBeGreaterThan(1.5);
    expect(h.every((c) => c.save.usage.evicted.entries === 0)).toBe(true);
  });

  it.skipIf(!tempRecordsReads && !canMountTmpfs)(
    "a job whose kernels vary from run to run (a sharded matrix) does not thrash: a set used every 4th run stays",
    async () => {
      const work = tempDir("ws");
      const h = await simulateHistory({
        work,
        runners: relatimeFolder() as string,
        store: localStore(path.join(work, "store")),
        ...HISTORY,
        commits: 14,
        churn: 0,
        rotating: { sets: 4, kernels: 10 },
      });
      expect(recompiled(h)).toBe(0);
      // The rule is what keeps them: with keep-unused.runs under the period they compile again.
      const w2 = tempDir("ws");
      const thrash = await simulateHistory({
        work: w2,
        runners: relatimeFolder() as string,
        store: localStore(path.join(w2, "store")),
        ...HISTORY,
        commits: 14,
        churn: 0,
        rotating: { sets: 4, kernels: 10 },
        save: { "keep-unused": { runs: 3 } },
      });
      expect(recompiled(thrash)).toBeGreaterThan(0);
    },
  );

  it.skipIf(!canMountTmpfs)(
    "under noatime every entry counts as used (nothing evicted), and the hook alone still bounds the key",
    async () => {
      const work = tempDir("ws");
      const runners = path.join(work, "noatime");
      mountTmpfs(runners, "64m", "noatime");
      const blind = await simulateHistory({
        work,
        runners,
        store: localStore(path.join(work, "store")),
        ...HISTORY,
        commits: 12,
      });
      expect(last(blind).save.usage.source).toBe("none");
      expect(blind.every((c) => c.save.usage.evicted.entries === 0)).toBe(true);
      const w2 = tempDir("ws");
      const hooked = await simulateHistory({
        work: w2,
        runners,
        store: localStore(path.join(w2, "store")),
        ...HISTORY,
        usage: "hook",
      });
      expect(last(hooked).save.usage.source).toBe("hook");
      expect(ratio(last(hooked))).toBeLessThanOrEqual(1.25);
      expect(recompiled(hooked)).toBe(0);
    },
  );
});

/** Reads one entry of a cache folder as Triton does on a hit (its group file, else its one file). */
function readOneEntry(root: string): void {
  const entry = fs
    .readdirSync(root)
    .filter((n) => !n.startsWith(".kcache-"))
    .sort()[0] as string;
  for (const f of fs.readdirSync(path.join(root, entry))) fs.readFileSync(path.join(root, entry, f));
}

/** One saved key on main, restored into a fresh folder (one that records reads) by a job that reads none of it. */
async function unreadRestore(save_: Record<string, unknown>, ref?: string) {
  const work = relatimeFolder("ws") as string;
  const store = localStore(path.join(work, "store"));
  const src = path.join(work, "src");
  generateTritonCache(src, { entries: 20, totalBytes: 200_000 });
  await save(
    await storeContext(store, src, path.join(work, "s0"), { revision: "a".repeat(40), save: save_ }),
  );
  const root = path.join(work, "runner");
  const ctx = await storeContext(store, root, path.join(work, "s1"), {
    revision: "b".repeat(40),
    save: save_,
    ...(ref ? { ref } : {}),
  });
  return { work, store, ctx, restored: await restore(ctx) };
}

describe.skipIf(!tempRecordsReads && !canMountTmpfs)("what never evicts", () => {
  it("a pull request's save evicts nothing, and main's key keeps every entry", async () => {
    const { store, ctx, restored } = await unreadRestore({ "keep-unused": { runs: 1 } }, "refs/pull/7/merge");
    expect(restored.entriesRestored).toBeGreaterThan(0);
    const r = await save(ctx);
    expect(r.scope).toBe("pr/7");
    expect(r.usage.evicted.entries).toBe(0);
    expect(r.usage.noEvict).toMatch(/scope pr\/7/);
    expect(r.entries).toBe(restored.entriesRestored);
    const main = decodeManifest(
      (await store.read(manifestObject("branch/main", restored.matchedKey as string))) as Buffer,
      "main",
    );
    expect(main.entries.length).toBe(restored.entriesRestored);
  });

  it("the same save on main evicts every entry the job did not read (the rule works), once it read some", async () => {
    const { ctx, restored } = await unreadRestore({ "keep-unused": { runs: 1 } });
    readOneEntry(ctx.caches[0]?.path as string);
    const r = await save(ctx);
    expect(r.usage.source).toBe("atime");
    expect(r.usage.evicted.entries).toBe(restored.entriesRestored - 1);
    expect(r.usage.live.entries).toBe(1);
  });

  it("a job that read none of the key never empties it on the key's record alone (a forged or wrong record)", async () => {
    const { ctx, restored } = await unreadRestore({ "keep-unused": { runs: 1 } });
    const r = await save(ctx);
    expect(r.usage.evicted.entries).toBe(0);
    expect(r.usage.noEvict).toMatch(/used none of the key's \d+ entries.*record alone/);
    expect(r.entries).toBe(restored.entriesRestored);
  });

  it("after a --lookup-only restore, a save has no stamps to read use from and evicts nothing", async () => {
    const { ctx } = await unreadRestore({ "keep-unused": { runs: 1 } });
    await restore(ctx, { lookupOnly: true });
    fs.mkdirSync(path.join(ctx.caches[0]?.path as string, "new"), { recursive: true });
    generateTritonCache(path.join(ctx.caches[0]?.path as string), { entries: 2, totalBytes: 5000, seed: 99 });
    const r = await save(ctx);
    expect(r.usage.source).toBe("none");
    expect(r.usage.evicted.entries).toBe(0);
  });

  it("a prewarm that compiled nothing evicts nothing; --no-evict never does", async () => {
    const a = await unreadRestore({ "keep-unused": { runs: 1 } });
    const r = await save(a.ctx, { evict: "if-new" });
    expect(r.usage.evicted.entries).toBe(0);
    expect(r.usage.noEvict).toMatch(/compiled nothing/);
    const b = await unreadRestore({ "keep-unused": { runs: 1 } });
    const s = await save(b.ctx, { evict: { never: "--no-evict" } });
    expect(s.usage.evicted.entries).toBe(0);
  });

  it("an entry unused for keep-unused.days is dropped even before keep-unused.runs saves", async () => {
    const { work, store, ctx } = await unreadRestore({ "keep-unused": { runs: 50, days: 30 } });
    // Make the parent's record of use 40 days old, as a rarely saved prefix's would be.
    const parent = ctx.caches[0] && (await restore(ctx)).matchedKey;
    const object = manifestObject("branch/main", parent as string);
    const m = decodeManifest((await store.read(object)) as Buffer, object);
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    m.createdAt = old;
    m.uses = m.uses?.map((u) => ({ ...u, at: old }));
    await store.delete(object);
    await store.createIfAbsent(object, encodeManifest(m));
    fs.rmSync(path.join(work, "runner"), { recursive: true });
    const fresh = await storeContext(store, path.join(work, "runner"), path.join(work, "s2"), {
      revision: "c".repeat(40),
      save: { "keep-unused": { runs: 50, days: 30 } },
    });
    const restored = await restore(fresh);
    readOneEntry(path.join(work, "runner"));
    const r = await save(fresh);
    expect(r.usage.evicted.byRule.days).toBe(restored.entriesRestored - 1);
  });
});
