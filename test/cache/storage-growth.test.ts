import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { save } from "../../src/cache/save/save.js";
import { localStore } from "../../src/store/local.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { sandbox, tempDir } from "../helpers/sandbox.js";
import { storeContext } from "../helpers/store-context.js";

const packBytes = (store: string) =>
  fs
    .readdirSync(path.join(store, "packs"), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .reduce((n, d) => n + fs.statSync(path.join(d.parentPath, d.name)).size, 0);

describe("the store over many default-branch commits", () => {
  it("stays within 2x of one compressed cache after 100 commits at 1% kernel churn, without pruning", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    generateTritonCache(root, { entries: 200, totalBytes: 2_000_000, seed: 1 });
    const rev = (i: number) => i.toString(16).padStart(40, "0");
    const first = await save(await sb.context({ revision: rev(1) }));
    expect(first.outcome).toBe("saved");
    let consolidations = 0;
    for (let i = 2; i <= 101; i++) {
      // Each commit compiles about 1% new kernels: two entries of this size.
      const add = path.join(sb.dir, `new-${i}`);
      generateTritonCache(add, { entries: 2, totalBytes: 20_000, seed: 1000 + i });
      for (const e of fs.readdirSync(add)) fs.renameSync(path.join(add, e), path.join(root, e));
      const r = await save(await sb.context({ revision: rev(i) }));
      expect(r.outcome, `commit ${i}`).toBe("saved");
      if (r.consolidated) consolidations++;
    }
    expect(consolidations).toBeGreaterThan(5);
    // One compressed copy of the final cache, saved alone.
    const alone = sandbox();
    const final = await save(
      await alone.context({
        config: alone.config({
          caches: [{ name: "triton", kind: "triton", path: root }],
          store: { path: alone.store },
          key: { prefix: "bench" },
        }),
        revision: rev(999),
      }),
    );
    expect(final.entries).toBe(400);
    const ratio = packBytes(sb.store) / packBytes(alone.store);
    expect(ratio).toBeLessThanOrEqual(2);
  });

  it("a lazy cache whose kernels are replaced, 1% a commit, stays within 2x of one compressed cache after 50 commits", async () => {
    // Several packs, as a real cache has (the bench's 110 MB holds eight): mostly dead ones and the
    // last small pack of a split were packed again at each consolidation: 2.14x here before.
    const dir = tempDir("kcache-churn");
    const root = path.join(dir, "triton");
    generateTritonCache(root, { entries: 200, totalBytes: 20_000_000, seed: 2 });
    const rev = (i: number) => i.toString(16).padStart(40, "0");
    const saveAt = async (i: number, to = "store") =>
      save(
        await storeContext(localStore(path.join(dir, to)), root, path.join(dir, `state-${to}`), {
          revision: rev(i),
          lazy: true,
        }),
      );
    expect((await saveAt(0)).packsWritten).toBeGreaterThan(1);
    let consolidations = 0;
    for (let i = 1; i <= 50; i++) {
      // Two entries leave and two come (a kernel and a launcher, 1% of the bytes): the cache keeps its size.
      const add = path.join(dir, `new-${i}`);
      generateTritonCache(add, { entries: 2, totalBytes: 200_000, seed: 3000 + i });
      for (const e of fs.readdirSync(root).sort().slice(0, 2))
        fs.rmSync(path.join(root, e), { recursive: true });
      for (const e of fs.readdirSync(add)) fs.renameSync(path.join(add, e), path.join(root, e));
      const r = await saveAt(i);
      expect(r.outcome, `commit ${i}`).toBe("saved");
      if (r.consolidated) consolidations++;
    }
    expect(consolidations).toBeGreaterThan(2);
    // One compressed copy of the final cache, saved alone.
    await saveAt(999, "alone");
    const ratio = packBytes(path.join(dir, "store")) / packBytes(path.join(dir, "alone"));
    expect(ratio).toBeLessThanOrEqual(2);
  });
});
