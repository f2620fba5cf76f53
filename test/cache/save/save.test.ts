import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readCatalog } from "../../../src/cache/catalog.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { localStore } from "../../../src/store/local.js";
import {
  addCompileDebris,
  generateTritonCache,
  rng,
  tritonKeyName,
  writeKernelEntry,
} from "../../fixtures/triton-cache.js";
import { sandbox } from "../../helpers/sandbox.js";
import { treeDigests } from "../../helpers/tree.js";

const REV1 = "1".repeat(40);
const REV2 = "2".repeat(40);
const REV3 = "3".repeat(40);
const REV4 = "4".repeat(40);

function storeFiles(store: string, under: string): string[] {
  const dir = path.join(store, under);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => d.name);
}

async function manifests(store: string) {
  return (await readCatalog(localStore(store))).map((i) => i.manifest).filter((m) => m !== null);
}

describe("save", () => {
  it("never saves temp folders, entries without a group file or lock files", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    const good = generateTritonCache(root, { entries: 12, totalBytes: 600_000 });
    const debris = addCompileDebris(root);
    const report = await save(await sb.context());
    expect(report.outcome).toBe("saved");
    // The three debris folders hold nothing complete; the temp folder and the lock are counted too.
    expect(report.skipped).toMatchObject({ incomplete: 3, tempDirs: 1, lockFiles: 1 });
    const [m] = await manifests(sb.store);
    const names = m?.entries.map((e) => e.name).sort();
    expect(names).toEqual(good.map((g) => g.name).sort());
    expect(names).not.toContain(debris.partialEntry);
    expect(names).not.toContain(debris.tempEntry);
  });

  it("packs only new entries on top of the parent and restores the union", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    generateTritonCache(root, { entries: 40, totalBytes: 2_000_000, seed: 3 });
    const first = await save(await sb.context({ revision: REV1 }));
    expect(first.entriesNew).toBe(40);

    // A later run compiles two more kernels (5%).
    const r = rng(99);
    writeKernelEntry(root, tritonKeyName("new-a"), "new_a", 40_000, r);
    writeKernelEntry(root, tritonKeyName("new-b"), "new_b", 40_000, r);
    const second = await save(await sb.context({ revision: REV2 }));
    expect(second).toMatchObject({
      outcome: "saved",
      entriesNew: 2,
      entriesReused: 40,
      packsWritten: 1,
      entries: 42,
    });
    expect(second.bytesUploaded).toBeLessThan(first.bytesUploaded / 5);

    const m2 = (await manifests(sb.store)).find((m) => m.revision === REV2);
    expect(m2?.parent).toBe(first.primaryKey);
    expect(m2?.packs).toHaveLength(2);

    const elsewhere = path.join(sb.dir, "fresh");
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: elsewhere }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const restored = await restore(
      await sb.context({ config: cfg, revision: REV2, stateDir: path.join(sb.dir, "s2") }),
    );
    expect(restored.entriesRestored).toBe(42);
    const src = treeDigests(root);
    const dst = treeDigests(elsewhere);
    expect([...dst.keys()].sort()).toEqual([...src.keys()].sort());
  });

  it("uploads no pack when nothing is new, even at another path and revision, and still records the key", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 20, totalBytes: 1_000_000 });
    await save(await sb.context({ revision: REV1 }));
    const before = storeFiles(sb.store, "packs").length;

    const other = path.join(sb.dir, "runner-2");
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: other }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const ctx = await sb.context({ config: cfg, revision: REV2, stateDir: path.join(sb.dir, "s2") });
    await restore(ctx);
    const again = await save(ctx);
    expect(again).toMatchObject({ outcome: "nothing-new", packsWritten: 0, entries: 20, entriesReused: 20 });
    expect(again.bytesUploaded).toBeLessThan(20_000); // the manifest alone
    expect(again.message).toMatch(/recorded bench-.*-2{40} over its packs \(no pack written/);
    expect(storeFiles(sb.store, "packs")).toHaveLength(before);
    // The revision's own key exists now: the next run at REV2 hits it exactly, anywhere.
    expect(await manifests(sb.store)).toHaveLength(2);
    const third = path.join(sb.dir, "runner-3");
    const cfg3 = sb.config({
      caches: [{ name: "triton", kind: "triton", path: third }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const r = await restore(
      await sb.context({ config: cfg3, revision: REV2, stateDir: path.join(sb.dir, "s3") }),
    );
    expect(r).toMatchObject({ cacheHit: true, entriesRestored: 20 });
    expect(r.matchedKey).toMatch(/-2{40}$/);
    // And saving REV2 again is a key that exists: nothing written at all.
    const fourth = await save(
      await sb.context({ config: cfg3, revision: REV2, stateDir: path.join(sb.dir, "s3") }),
    );
    expect(fourth.outcome).toBe("key-exists");
  });

  it("re-reads a touched entry and uploads it only if its bytes changed", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    const entries = generateTritonCache(root, { entries: 10, totalBytes: 500_000 });
    await save(await sb.context({ revision: REV1 }));
    const k = entries[0] as { name: string; files: string[] };
    const f = path.join(root, k.name, k.files[0] as string);
    fs.utimesSync(f, new Date(), new Date(Date.now() + 5000));
    const touched = await save(await sb.context({ revision: REV2 }));
    expect(touched.outcome).toBe("nothing-new");

    fs.appendFileSync(f, "\n// recompiled");
    const changed = await save(await sb.context({ revision: REV3 }));
    expect(changed).toMatchObject({ outcome: "saved", entriesNew: 1, entriesReused: 9 });
  });

  it("drops entries that are gone locally from the new manifest", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    const entries = generateTritonCache(root, { entries: 10, totalBytes: 500_000 });
    await save(await sb.context({ revision: REV1 }));
    fs.rmSync(path.join(root, (entries[1] as { name: string }).name), { recursive: true });
    const r = await save(await sb.context({ revision: REV2 }));
    expect(r).toMatchObject({ outcome: "saved", entriesDropped: 1, entries: 9, packsWritten: 0 });
    const m = (await manifests(sb.store)).find((x) => x.revision === REV2);
    expect(m?.entries.map((e) => e.name)).not.toContain((entries[1] as { name: string }).name);
  });

  it("consolidates the small packs into one when their chain grows past max-chain, keeping the large live pack", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: root }],
      store: { path: sb.store },
      key: { prefix: "bench" },
      save: { "max-chain": 2 },
    });
    generateTritonCache(root, { entries: 10, totalBytes: 300_000, seed: 1 });
    const r = rng(5);
    await save(await sb.context({ config: cfg, revision: REV1 }));
    const base = (await manifests(sb.store)).find((x) => x.revision === REV1)?.packs[0]?.object;
    writeKernelEntry(root, tritonKeyName("b"), "b", 10_000, r);
    const second = await save(await sb.context({ config: cfg, revision: REV2 }));
    expect(second.consolidated).toBe(false);
    writeKernelEntry(root, tritonKeyName("c"), "c", 10_000, r);
    const third = await save(await sb.context({ config: cfg, revision: REV3 }));
    expect(third.consolidated).toBe(false);
    writeKernelEntry(root, tritonKeyName("d"), "d", 10_000, r);
    const fourth = await save(await sb.context({ config: cfg, revision: REV4 }));
    // b's and c's small packs and d go into one new pack; the base pack, large and live, stays.
    expect(fourth).toMatchObject({
      consolidated: true,
      packsWritten: 1,
      entries: 13,
      entriesNew: 1,
      entriesReused: 10,
    });
    const m = (await manifests(sb.store)).find((x) => x.revision === REV4);
    expect(m?.packs.map((p) => p.object)).toContain(base);
    expect(m?.packs).toHaveLength(2);
  });

  it("consolidates when most of the referenced pack bytes are dead", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    const entries = generateTritonCache(root, { entries: 20, totalBytes: 1_000_000 });
    await save(await sb.context({ revision: REV1 }));
    for (const e of entries.slice(0, 14)) fs.rmSync(path.join(root, e.name), { recursive: true });
    const r = await save(await sb.context({ revision: REV4 }));
    expect(r).toMatchObject({ outcome: "saved", consolidated: true, entries: 6 });
  });

  it("treats keys as immutable: a second save of the same key writes nothing", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 5, totalBytes: 200_000 });
    await save(await sb.context({ revision: REV1 }));
    const again = await save(
      await sb.context({ revision: REV1, stateDir: path.join(sb.dir, "other-state") }),
    );
    expect(again.outcome).toBe("key-exists");
    expect(again.message).toMatch(/immutable/);
  });
});
