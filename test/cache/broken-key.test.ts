import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { sandbox } from "../helpers/sandbox.js";

/** Deletes one of the store's packs: what GitHub's cache does on its own (LRU, 7 days idle). */
function evictOnePack(store: string): string {
  const pack = fs
    .readdirSync(path.join(store, "packs"), { recursive: true, withFileTypes: true })
    .find((e) => e.isFile());
  if (!pack) throw new Error("no pack in the store");
  fs.rmSync(path.join(pack.parentPath, pack.name));
  return pack.name;
}

/** A restore of the sandbox's key by a job of its own (another folder, another state): what a later job gets. */
async function restoreAtFreshPath(sb: ReturnType<typeof sandbox>) {
  const fresh = sb.config({
    caches: [{ name: "triton", kind: "triton", path: path.join(sb.dir, "fresh") }],
    store: { path: sb.store },
    key: { prefix: "bench" },
  });
  return restore(await sb.context({ config: fresh, stateDir: path.join(sb.dir, "s3") }));
}

describe("a key whose pack the store evicted", () => {
  it("is saved again by the next run of its revision, and restores whole after", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 12, totalBytes: 600_000 });
    expect((await save(await sb.context())).outcome).toBe("saved");
    evictOnePack(sb.store);
    // The re-run of that revision: its restore is incomplete, its job compiles the rest, then it saves.
    const config = sb.config({
      caches: [{ name: "triton", kind: "triton", path: path.join(sb.dir, "rerun") }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const rerun = await sb.context({ config, stateDir: path.join(sb.dir, "s2") });
    const partial = await restore(rerun);
    expect(partial.entriesRestored).toBeLessThan(12);
    generateTritonCache(path.join(sb.dir, "rerun"), { entries: 12, totalBytes: 600_000 });
    const again = await save(rerun);
    // Not "restored exactly; nothing saved": the key is broken, so it is replaced.
    expect(again.outcome).toBe("saved");
    expect(again.primaryKey).toBe(rerun.key);
    const whole = await restoreAtFreshPath(sb);
    expect(whole).toMatchObject({ cacheHit: true, entriesRestored: 12, entriesBad: 0 });
  });

  it("evicted whole (manifest and packs), is saved again by a save on a runner whose state still names it", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 8, totalBytes: 300_000 });
    const ctx = await sb.context();
    expect((await save(ctx)).outcome).toBe("saved");
    // The store lost everything (GitHub's cache evicts whole keys; a bucket was emptied); this
    // runner's local state still says the job's parent is that very key.
    fs.rmSync(sb.store, { recursive: true });
    const again = await save(await sb.context());
    expect(again.outcome).toBe("saved");
    expect(again.parentKey).toBeNull();
    expect(again.entriesNew).toBe(8);
    const whole = await restoreAtFreshPath(sb);
    expect(whole).toMatchObject({ cacheHit: true, entriesRestored: 8, entriesBad: 0 });
  });

  it("is left as it is, with a message that says why, where the store cannot delete a manifest", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 6, totalBytes: 200_000 });
    const ctx = await sb.context();
    expect((await save(ctx)).outcome).toBe("saved");
    evictOnePack(sb.store);
    // GitHub's cache without a token that may delete: the same store, its delete capability off.
    const store = Object.create(ctx.store) as typeof ctx.store;
    Object.defineProperty(store, "capabilities", { value: { ...ctx.store.capabilities, delete: false } });
    const r = await save({ ...(await sb.context({ stateDir: path.join(sb.dir, "s2") })), store });
    expect(r.outcome).toBe("key-exists");
    expect(r.message).toMatch(
      /is in scope branch\/main but 1 of its \d+ packs are gone from the store .*, and this store cannot replace its manifest/,
    );
  });
});
