import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runSimWorkload } from "../helpers/python-sim.js";
import { sandbox } from "../helpers/sandbox.js";
import { groupFiles, treeDigests } from "../helpers/tree.js";

const cacheAt = (sb: ReturnType<typeof sandbox>, p: string) =>
  sb.config({
    caches: [{ name: "triton", kind: "triton", path: p }],
    store: { path: sb.store },
    key: { prefix: "bench" },
  });

describe("restore at another path", () => {
  it("rewrites every group file so its child paths point inside the new root", async () => {
    const sb = sandbox();
    const a = path.join(sb.dir, "runner-a", "triton");
    const b = path.join(sb.dir, "elsewhere", "cache");
    generateTritonCache(a, { entries: 30, totalBytes: 3_000_000, seed: 7 });
    const saved = await save(await sb.context({ config: cacheAt(sb, a) }));
    expect(saved.outcome).toBe("saved");

    const r = await restore(
      await sb.context({ config: cacheAt(sb, b), stateDir: path.join(sb.dir, "state-b") }),
    );
    expect(r.cacheHit).toBe(true);
    expect(r.entriesRestored).toBe(30);
    expect(r.entriesBad).toBe(0);

    const groups = groupFiles(b);
    expect(groups.length).toBeGreaterThan(20);
    for (const g of groups) {
      for (const [child, p] of Object.entries(g.childPaths)) {
        expect(p).toBe(path.join(b, g.entry, child));
        expect(fs.existsSync(p)).toBe(true);
      }
    }
    // Everything but the group files is byte for byte what was saved.
    const before = treeDigests(a);
    const after = treeDigests(b);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [rel, digest] of before) if (!rel.includes("__grp__")) expect(after.get(rel)).toBe(digest);
  });

  it("loads every kernel from a cache restored at another path, where a plain copy recompiles all", async () => {
    const sb = sandbox();
    const a = path.join(sb.dir, "runner-a", "triton");
    const cold = runSimWorkload(a);
    expect(cold.compiled).toBeGreaterThan(0);
    await save(await sb.context({ config: cacheAt(sb, a) }));

    const b = path.join(sb.dir, "runner-b", "work", "triton");
    await restore(await sb.context({ config: cacheAt(sb, b), stateDir: path.join(sb.dir, "state-b") }));
    const warm = runSimWorkload(b);
    // 4 plain kernels and 2 autotuned ones (their best config), every one a cache hit.
    expect(warm).toMatchObject({ compiled: 0, loaded: 6 });

    // The failure kcache prevents: the same bytes at a new path, with the old path gone (another
    // runner), miss every kernel because group files hold absolute paths.
    const c = path.join(sb.dir, "copied");
    execFileSync("mv", [a, c]);
    const copied = runSimWorkload(c);
    expect(copied.loaded).toBe(0);
  });
});
