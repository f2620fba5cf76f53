import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { sandbox } from "../helpers/sandbox.js";
import { treeDigests } from "../helpers/tree.js";

afterEach(() => {
  delete process.env.KCACHE_ZSTD;
});

describe("zstd engines", () => {
  it.each([
    ["napi", "system"],
    ["system", "napi"],
  ])("a pack written with the %s engine restores with the %s engine", async (writer, reader) => {
    const sb = sandbox();
    const src = path.join(sb.dir, "triton");
    generateTritonCache(src, { entries: 12, totalBytes: 800_000 });
    process.env.KCACHE_ZSTD = writer;
    expect((await save(await sb.context())).outcome).toBe("saved");
    process.env.KCACHE_ZSTD = reader;
    const dest = path.join(sb.dir, "dest");
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: dest }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const r = await restore(await sb.context({ config: cfg, stateDir: path.join(sb.dir, "s2") }));
    expect(r).toMatchObject({ entriesRestored: 12, entriesBad: 0 });
    expect([...treeDigests(dest).keys()].sort()).toEqual([...treeDigests(src).keys()].sort());
  });
});
