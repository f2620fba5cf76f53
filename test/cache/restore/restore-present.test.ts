import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { sandbox } from "../../helpers/sandbox.js";
import { treeDigests } from "../../helpers/tree.js";

describe("restore on a runner that keeps its cache folder", () => {
  it("downloads nothing for entries already present as the manifest has them, and repairs one that changed", async () => {
    const sb = sandbox();
    const src = path.join(sb.dir, "triton");
    const entries = generateTritonCache(src, { entries: 20, totalBytes: 1_000_000 });
    await save(await sb.context());
    const dest = path.join(sb.dir, "kept");
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: dest }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const ctx = () => sb.context({ config: cfg, stateDir: path.join(sb.dir, "runner-state") });

    const first = await restore(await ctx());
    expect(first).toMatchObject({ entriesRestored: 20, entriesPresent: 0 });
    const again = await restore(await ctx());
    expect(again).toMatchObject({ entriesRestored: 0, entriesPresent: 20, bytesDownloaded: 0 });

    // A file changed behind kcache's back: that entry alone is fetched and put back as saved.
    const e = entries[0] as { name: string; files: string[] };
    const f = path.join(dest, e.name, e.files[0] as string);
    fs.writeFileSync(f, "damaged");
    const repaired = await restore(await ctx());
    expect(repaired).toMatchObject({ entriesRestored: 1, entriesPresent: 19 });
    const want = treeDigests(src);
    expect(treeDigests(dest).get(`${e.name}/${e.files[0]}`)).toBe(want.get(`${e.name}/${e.files[0]}`));
  });
});
