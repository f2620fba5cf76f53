import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { save } from "../../src/cache/save/save.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { sandbox } from "../helpers/sandbox.js";

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
});
