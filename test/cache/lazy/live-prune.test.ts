import fs from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { save } from "../../../src/cache/save/save.js";
import { prune } from "../../../src/cache/usage/prune.js";
import { silentLog } from "../../../src/log.js";
import { liveObjects } from "../../../src/store/layout.js";
import { localStore } from "../../../src/store/local.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { tempDir } from "../../helpers/sandbox.js";
import { storeContext } from "../../helpers/store-context.js";

describe("kcache prune and live objects (store.live)", () => {
  it("deletes those of entries a key now holds and those no key took within a day; spares a young one no key holds", async () => {
    const dir = tempDir("live-prune");
    const src = path.join(dir, "src");
    const entries = generateTritonCache(src, { entries: 3, totalBytes: 30_000, seed: 2 });
    const store = localStore(path.join(dir, "store"));
    await save(await storeContext(store, src, path.join(dir, "s")));
    const put = async (entry: string, ageMs: number) => {
      const o = liveObjects("branch/main", "stack", "triton", entry);
      for (const name of [o.pack, o.record]) {
        await store.put(name, Readable.from([Buffer.from("x")]));
        const t = new Date(Date.now() - ageMs);
        fs.utimesSync(path.join(dir, "store", name), t, t);
      }
      return o;
    };
    const held = await put(entries[0]?.name as string, 2 * 3600_000); // a key holds it now
    const stale = await put("K".repeat(52), 30 * 3600_000); // no key took it, a day and more ago
    const young = await put("M".repeat(52), 2 * 3600_000); // no key yet, shared two hours ago
    const r = await prune(store, { graceMs: 3600_000 }, silentLog());
    expect(r.liveDeleted).toBe(4);
    for (const o of [held, stale])
      for (const n of [o.pack, o.record]) expect(await store.exists(n)).toBe(false);
    for (const n of [young.pack, young.record]) expect(await store.exists(n)).toBe(true);
  });

  it("spares the default branch's live object of an entry only a pull request's key holds (its jobs never read that key)", async () => {
    const dir = tempDir("live-prune-pr");
    const src = path.join(dir, "src");
    const entries = generateTritonCache(src, { entries: 2, totalBytes: 20_000, seed: 3 });
    const store = localStore(path.join(dir, "store"));
    await save(await storeContext(store, src, path.join(dir, "s"), { ref: "refs/pull/9/merge" }));
    expect((await store.list("manifests/")).map((o) => o.name.split("/")[1])).toEqual(["pr%2F9"]);
    const live = async (scope: string) => {
      const o = liveObjects(scope, "stack", "triton", entries[0]?.name as string);
      for (const name of [o.pack, o.record]) {
        await store.put(name, Readable.from([Buffer.from("x")]));
        const t = new Date(Date.now() - 2 * 3600_000);
        fs.utimesSync(path.join(dir, "store", name), t, t);
      }
      return o;
    };
    const mains = await live("branch/main");
    const prs = await live("pr/9");
    const r = await prune(store, { graceMs: 3600_000 }, silentLog());
    expect(r.liveDeleted).toBe(2);
    for (const n of [mains.pack, mains.record]) expect(await store.exists(n)).toBe(true);
    for (const n of [prs.pack, prs.record]) expect(await store.exists(n)).toBe(false);
  });
});
