import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Strictness } from "../../src/cache/faults.js";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { decodeManifest, encodeManifest } from "../../src/manifest/manifest.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { type Sandbox, sandbox } from "../helpers/sandbox.js";
import { treeDigests } from "../helpers/tree.js";

const REV1 = "1".repeat(40);
const REV2 = "2".repeat(40);

/** A cache saved in several small packs, and a second runner's config to restore it elsewhere. */
async function savedInPacks(sb: Sandbox) {
  const src = path.join(sb.dir, "triton");
  generateTritonCache(src, { entries: 30, totalBytes: 3_000_000, seed: 11 });
  const cfg = (p: string) =>
    sb.config({
      caches: [{ name: "triton", kind: "triton", path: p }],
      store: { path: sb.store },
      key: { prefix: "bench" },
      save: { "pack-mib": 1 },
    });
  await save(await sb.context({ config: cfg(src), revision: REV1 }));
  const manifestFile = fs
    .readdirSync(path.join(sb.store, "manifests"), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath, d.name))[0] as string;
  const manifest = decodeManifest(fs.readFileSync(manifestFile), manifestFile);
  expect(manifest.packs.length).toBeGreaterThanOrEqual(3);
  const dest = path.join(sb.dir, "restored");
  const restoreCtx = () =>
    sb.context({ config: cfg(dest), revision: REV1, stateDir: path.join(sb.dir, "s2") });
  return { src, dest, manifest, manifestFile, restoreCtx };
}

/** Every entry present in `dest` is byte-identical to the source (group files aside) and complete. */
function expectOnlyWholeEntries(src: string, dest: string) {
  const s = treeDigests(src);
  const d = treeDigests(dest);
  const entries = new Set([...d.keys()].map((k) => k.split("/")[0]));
  for (const e of entries) {
    const want = [...s.keys()].filter((k) => k.startsWith(`${e}/`)).sort();
    const got = [...d.keys()].filter((k) => k.startsWith(`${e}/`)).sort();
    expect(got).toEqual(want);
    for (const k of got) if (!k.includes("__grp__")) expect(d.get(k)).toBe(s.get(k));
  }
  return entries.size;
}

describe("damaged stores", () => {
  it("skips the entries of a corrupted pack and restores the rest", async () => {
    const sb = sandbox();
    const { src, dest, manifest, restoreCtx } = await savedInPacks(sb);
    const victim = manifest.packs[1]?.object as string;
    const file = path.join(sb.store, ...victim.split("/"));
    const bytes = fs.readFileSync(file);
    for (let i = 200; i < bytes.length; i += 97) bytes[i] = (bytes[i] as number) ^ 0xff;
    fs.writeFileSync(file, bytes);

    const r = await restore(await restoreCtx());
    const inVictim = manifest.entries.filter((e) => e.pack === 1).length;
    expect(r.entriesBad).toBeGreaterThan(0);
    expect(r.entriesBad).toBeLessThanOrEqual(inVictim);
    expect(r.entriesRestored).toBe(manifest.entries.length - r.entriesBad);
    expect(expectOnlyWholeEntries(src, dest)).toBe(r.entriesRestored);
  });

  it("never writes an entry whose bytes do not match the manifest's digest", async () => {
    const sb = sandbox();
    const { src, dest, manifest, manifestFile, restoreCtx } = await savedInPacks(sb);
    // A manifest that promises other bytes for two entries (as a tampered pack would be).
    const tampered = structuredClone(manifest);
    const [a, b] = tampered.entries;
    if (!a || !b) throw new Error("fixture too small");
    a.sha256 = "0".repeat(64);
    b.sha256 = "f".repeat(64);
    fs.writeFileSync(manifestFile, encodeManifest(tampered));

    const r = await restore(await restoreCtx());
    expect(r.entriesBad).toBe(2);
    expect(r.entriesRestored).toBe(manifest.entries.length - 2);
    expect(fs.existsSync(path.join(dest, a.name))).toBe(false);
    expect(fs.existsSync(path.join(dest, b.name))).toBe(false);
    expectOnlyWholeEntries(src, dest);
  });

  it("restores what it can when a pack is missing", async () => {
    const sb = sandbox();
    const { manifest, restoreCtx } = await savedInPacks(sb);
    const pack = manifest.packs[0];
    if (!pack) throw new Error("fixture has no pack");
    fs.rmSync(path.join(sb.store, ...pack.object.split("/")));
    const r = await restore(await restoreCtx());
    const lost = manifest.entries.filter((e) => e.pack === 0).length;
    expect(r.entriesBad).toBe(lost);
    expect(r.entriesRestored).toBe(manifest.entries.length - lost);
  });

  it("detects an edited manifest and falls back to the next candidate", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    generateTritonCache(root, { entries: 8, totalBytes: 300_000, seed: 2 });
    await save(await sb.context({ revision: REV1 }));
    generateTritonCache(root, { entries: 4, totalBytes: 100_000, seed: 9, prefix: "more" });
    const second = await save(await sb.context({ revision: REV2 }));
    expect(second.outcome).toBe("saved");

    const file = path.join(sb.store, "manifests", "branch%2Fmain", encodeURIComponent(second.primaryKey));
    // Still valid JSON, but not what was written: the integrity line catches it.
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace('"revision": "2222', '"revision": "3333'));
    const dest = path.join(sb.dir, "dest");
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: dest }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    const ctx = await sb.context({ config: cfg, revision: REV2, stateDir: path.join(sb.dir, "s3") });
    const r = await restore(ctx);
    expect(r.cacheHit).toBe(false);
    expect(r.matchedKey).toMatch(new RegExp(`${REV1}$`));
    expect(r.entriesRestored).toBe(8);
    expect(ctx.log.warnings.join("\n")).toMatch(/manifest digest mismatch/);
  });

  it("treats a truncated manifest as absent", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 4, totalBytes: 100_000 });
    const saved = await save(await sb.context({ revision: REV1 }));
    const file = path.join(sb.store, "manifests", "branch%2Fmain", encodeURIComponent(saved.primaryKey));
    fs.truncateSync(file, 100);
    const ctx = await sb.context({ revision: REV1, stateDir: path.join(sb.dir, "s4") });
    const r = await restore(ctx);
    expect(r.matchedKey).toBeNull();
    expect(ctx.log.warnings.join("\n")).toMatch(/manifest/);
  });
});

describe("reports that match the disk", () => {
  it("finds entries already whole in the folder by their digest and reads no pack for them, even one that is gone", async () => {
    const sb = sandbox();
    const { src, dest, manifest, restoreCtx } = await savedInPacks(sb);
    // Another restore (or a thread that died after placing) left pack 0's entries whole in the folder.
    const first = await restore(await restoreCtx());
    expect(first.entriesRestored).toBe(manifest.entries.length);
    const pack = manifest.packs[0];
    if (!pack) throw new Error("fixture has no pack");
    fs.rmSync(path.join(sb.store, ...pack.object.split("/")));
    // A fresh runner state (a persistent runner whose job-scoped state is gone): nothing recorded
    // says the entries are present, so the restore hashes what the folder holds.
    const ctx = await restoreCtx();
    fs.rmSync(path.join(sb.dir, "s2"), { recursive: true, force: true });
    const again = await restore(ctx);
    expect(again).toMatchObject({ entriesBad: 0, entriesRestored: 0, bytesDownloaded: 0 });
    expect(again.entriesPresent).toBe(manifest.entries.length);
    expect(again.faults).toEqual([]);
    expect(expectOnlyWholeEntries(src, dest)).toBe(manifest.entries.length);
  });

  it("counts an entry another restore placed while this one's pack could not be read as restored, not bad", async () => {
    const sb = sandbox();
    const { src, dest, manifest, restoreCtx } = await savedInPacks(sb);
    const pack = manifest.packs[0];
    if (!pack) throw new Error("fixture has no pack");
    const ctx = await restoreCtx();
    const { localFile: _inPlace, ...store } = ctx.store;
    // While this restore waits for pack 0, another restore into the same folder places its entries
    // whole; then this one's download of the pack fails.
    ctx.store = {
      ...store,
      get: async (name: string, expected?: number) => {
        if (name !== pack.object) return store.get(name, expected);
        for (const e of manifest.entries.filter((x) => x.pack === 0))
          fs.cpSync(path.join(src, e.name), path.join(dest, e.name), { recursive: true });
        throw new Error("connection reset while reading the pack");
      },
    };
    const r = await restore(ctx);
    expect(r.entriesBad).toBe(0);
    expect(r.entriesRestored + r.entriesPresent).toBe(manifest.entries.length);
    expect(r.faults.some((f) => f.code === "pack-unreadable" && f.message.includes(pack.object))).toBe(true);
    expect(expectOnlyWholeEntries(src, dest)).toBe(manifest.entries.length);
  });

  it("refuses a manifest that lists an entry twice as damaged (it would restore and count it twice)", async () => {
    const sb = sandbox();
    const { manifest, manifestFile, restoreCtx } = await savedInPacks(sb);
    const twice = structuredClone(manifest);
    twice.entries.push(structuredClone(twice.entries[0] as (typeof twice.entries)[number]));
    fs.writeFileSync(manifestFile, encodeManifest(twice));
    expect(() => decodeManifest(fs.readFileSync(manifestFile), manifestFile)).toThrow(/listed twice/);
    const r = await restore(await restoreCtx());
    expect(r.matchedKey).toBeNull();
    expect(r.faults[0]).toMatchObject({
      code: "manifest-damaged",
      message: expect.stringMatching(/listed twice \(a damaged manifest\)/),
    });
    const strict = await restoreCtx();
    strict.strict = Strictness.all;
    await expect(restore(strict)).rejects.toMatchObject({ exitCode: 3, fault: { code: "manifest-damaged" } });
    // --strict naming other codes lets this one warn: a miss, exit 0.
    const others = await restoreCtx();
    others.strict = Strictness.parse("entry-bad,disk-failed");
    expect((await restore(others)).matchedKey).toBeNull();
    const named = await restoreCtx();
    named.strict = Strictness.parse("manifest-damaged");
    await expect(restore(named)).rejects.toMatchObject({ exitCode: 3 });
  });

  it("refuses a manifest whose body names another key than the one it is stored under (exit 3 under --strict)", async () => {
    const sb = sandbox();
    const { manifest, manifestFile, restoreCtx } = await savedInPacks(sb);
    const other = structuredClone(manifest);
    other.key = `${manifest.key.slice(0, -1)}0`;
    fs.writeFileSync(manifestFile, encodeManifest(other));
    const r = await restore(await restoreCtx());
    expect(r.matchedKey).toBeNull();
    expect(r.faults[0]?.message).toMatch(/the manifest inside is .*, not the key it is stored under/);
    const strict = await restoreCtx();
    strict.strict = Strictness.all;
    await expect(restore(strict)).rejects.toMatchObject({ exitCode: 3 });
  });
});
