import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readCatalog } from "../../../src/cache/catalog.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { prune } from "../../../src/cache/usage/prune.js";
import { silentLog } from "../../../src/log.js";
import { localStore } from "../../../src/store/local.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { type Sandbox, sandbox } from "../../helpers/sandbox.js";

/** Three full saves of different caches, oldest first, each its own pack. */
async function threeKeys(sb: Sandbox) {
  const keys: string[] = [];
  for (let i = 1; i <= 3; i++) {
    const root = path.join(sb.dir, `t${i}`);
    generateTritonCache(root, { entries: 5, totalBytes: 200_000, seed: i, prefix: `k${i}` });
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: root }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const r = await save(
      await sb.context({ config: cfg, revision: String(i).repeat(40), stateDir: path.join(sb.dir, `s${i}`) }),
    );
    keys.push(r.primaryKey);
    // Distinct modification times, oldest first.
    const m = path.join(sb.store, "manifests", "branch%2Fmain", encodeURIComponent(r.primaryKey));
    const t = new Date(Date.now() - (4 - i) * 3600_000);
    fs.utimesSync(m, t, t);
  }
  return keys;
}

const packCount = (store: string) =>
  fs
    .readdirSync(path.join(store, "packs"), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile()).length;

describe("prune", () => {
  it("keeps the newest N keys per prefix and deletes packs no key references", async () => {
    const sb = sandbox();
    const keys = await threeKeys(sb);
    expect(packCount(sb.store)).toBe(3);
    const r = await prune(localStore(sb.store), { keep: 1, graceMs: 0 }, silentLog());
    expect(r.manifestsDeleted.map((m) => m.key).sort()).toEqual([keys[0], keys[1]].sort());
    expect(r.packsDeleted).toHaveLength(2);
    const left = await readCatalog(localStore(sb.store));
    expect(left.map((i) => i.key)).toEqual([keys[2]]);
    expect(packCount(sb.store)).toBe(1);
    // What is left still restores whole.
    const dest = path.join(sb.dir, "dest");
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: dest }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const restored = await restore(
      await sb.context({ config: cfg, revision: "3".repeat(40), stateDir: path.join(sb.dir, "sx") }),
    );
    expect(restored).toMatchObject({ entriesRestored: 5, entriesBad: 0 });
  });

  it("deletes keys older than a limit, and the oldest first to fit a size budget", async () => {
    const sb = sandbox();
    const keys = await threeKeys(sb);
    const dry = await prune(
      localStore(sb.store),
      { olderThanMs: 150 * 60_000, graceMs: 0, dryRun: true },
      silentLog(),
    );
    expect(dry.manifestsDeleted.map((m) => m.key)).toEqual([keys[0]]);
    expect((await readCatalog(localStore(sb.store))).length).toBe(3);

    const packBytes = fs
      .readdirSync(path.join(sb.store, "packs"), { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => fs.statSync(path.join(d.parentPath, d.name)).size);
    const budget = Math.max(...packBytes) * 2 + 1;
    const r = await prune(localStore(sb.store), { maxBytes: budget, graceMs: 0 }, silentLog());
    expect(r.manifestsDeleted.map((m) => m.key)).toEqual([keys[0]]);
    expect(r.bytesKept).toBeLessThanOrEqual(budget);
  });

  it("spares unreferenced packs younger than the grace period (a save may be in flight)", async () => {
    const sb = sandbox();
    await threeKeys(sb);
    const stray = path.join(sb.store, "packs", "branch%2Fmain", "inflight.tar.zst");
    fs.writeFileSync(stray, "uploading");
    const r = await prune(localStore(sb.store), { graceMs: 3600_000 }, silentLog());
    expect(r.packsDeleted).toEqual([]);
    expect(fs.existsSync(stray)).toBe(true);
    const old = new Date(Date.now() - 2 * 3600_000);
    fs.utimesSync(stray, old, old);
    const r2 = await prune(localStore(sb.store), { graceMs: 3600_000 }, silentLog());
    expect(r2.packsDeleted).toEqual(["packs/branch%2Fmain/inflight.tar.zst"]);
  });
});
