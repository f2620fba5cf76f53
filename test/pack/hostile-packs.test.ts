import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tritonKeyName } from "../fixtures/triton-cache.js";
import { emptyFrame } from "../fixtures/zstd-frames.js";
import { runCli } from "../helpers/cli.js";
import { diskBytes, entryDigest, plantPack } from "../helpers/hostile-pack.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { project } from "../helpers/project.js";

/** The key a restore in project `p` looks for. */
async function keyOf(p: ReturnType<typeof project>): Promise<string> {
  const r = await runCli(["key", "--json"], { env: p.env, cwd: p.dir });
  return (JSON.parse(r.stdout) as { key: string }).key;
}

/** Restores while sampling the bytes on disk under the cache folder every few milliseconds. */
async function restoreWatchingDisk(p: ReturnType<typeof project>, args: string[] = []) {
  let peakDisk = 0;
  const timer = setInterval(() => {
    peakDisk = Math.max(peakDisk, diskBytes(p.cache));
  }, 5);
  try {
    const run = await runMeasured(["restore", "--json", ...args], {
      env: p.env,
      cwd: p.dir,
      timeoutMs: 120_000,
    });
    return { run, peakDisk: Math.max(peakDisk, diskBytes(p.cache)) };
  } finally {
    clearInterval(timer);
  }
}

describe("hostile packs: every member is bounded by what the manifest promises", () => {
  const tiny = entryDigest([["k.so", "fifteen bytes!!"]]);

  it("a small pack whose member claims 300 MB for a 15-byte entry writes nothing of it to disk", async () => {
    const p = project();
    const entry = tritonKeyName("disk-bomb");
    const planted = await plantPack({
      store: p.store,
      key: await keyOf(p),
      prefix: "trust",
      members: [{ type: "Zeros", path: `triton/${entry}/k.so`, size: 300 * 1024 * 1024 }],
      entries: [{ name: entry, ...tiny }],
    });
    expect(planted.packBytes).toBeLessThan(100_000);
    const { run, peakDisk } = await restoreWatchingDisk(p);
    expect(run.code).toBe(0);
    expect(peakDisk).toBeLessThan(1024 * 1024);
    expect(JSON.parse(run.stdout)).toMatchObject({ entriesRestored: 0, entriesBad: 1 });
    expect(run.stderr).toMatch(/warning: restore of .* incomplete/);
    expect(fs.existsSync(path.join(p.cache, entry))).toBe(false);
  });

  it("a member past its own entry's promise is refused before it is written, even when the pack promises more in all", async () => {
    // The pack may expand to 400 MB by its manifest (another entry is promised that much), but the
    // 300 MB member belongs to a 15-byte entry: not one byte of it may reach the disk.
    const p = project();
    const entry = tritonKeyName("entry-bomb");
    await plantPack({
      store: p.store,
      key: await keyOf(p),
      prefix: "trust",
      members: [{ type: "Zeros", path: `triton/${entry}/k.so`, size: 300 * 1024 * 1024 }],
      entries: [{ name: entry, ...tiny }],
      entryBytes: 400 * 1024 * 1024,
    });
    const { run, peakDisk } = await restoreWatchingDisk(p, ["--verbose"]);
    expect(run.code).toBe(0);
    expect(peakDisk).toBeLessThan(1024 * 1024);
    expect(JSON.parse(run.stdout)).toMatchObject({ entriesRestored: 0, entriesBad: 1 });
    expect(run.stderr).toMatch(/pack holds more than the manifest promises for this entry/);
  });

  it("a small pack of many 20 MB members for a 15-byte entry never holds them in memory", async () => {
    const p = project();
    const entry = tritonKeyName("memory-bomb");
    await plantPack({
      store: p.store,
      key: await keyOf(p),
      prefix: "trust",
      members: Array.from({ length: 40 }, (_, i) => ({
        type: "Zeros" as const,
        path: `triton/${entry}/f${i}.so`,
        size: 20 * 1024 * 1024,
      })),
      entries: [{ name: entry, ...tiny }],
    });
    const { run } = await restoreWatchingDisk(p);
    expect(run.code).toBe(0);
    expect(run.peakRssMb).not.toBeNull();
    expect(run.peakRssMb as number).toBeLessThan(200);
    expect(JSON.parse(run.stdout)).toMatchObject({ entriesRestored: 0, entriesBad: 1 });
  });

  it("a pack that expands far past its manifest's bytes is abandoned, and --strict exits 3", async () => {
    const p = project();
    const entry = tritonKeyName("time-bomb");
    await plantPack({
      store: p.store,
      key: await keyOf(p),
      prefix: "trust",
      members: [
        { type: "File", path: `triton/${entry}/k.so`, data: "fifteen bytes!!" },
        // A member of no listed entry: skipped, but its bytes would still have to be decompressed.
        { type: "Zeros", path: `triton/${tritonKeyName("unlisted")}/x.so`, size: 1024 * 1024 * 1024 },
      ],
      entries: [{ name: entry, ...tiny }],
    });
    const lenient = await runMeasured(["restore", "--json"], { env: p.env, cwd: p.dir, timeoutMs: 120_000 });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(/expands past/);
    // The listed entry was whole before the bomb: it is restored.
    expect(JSON.parse(lenient.stdout)).toMatchObject({ entriesRestored: 1 });
    const strict = await runMeasured(["restore", "--strict"], {
      env: { ...p.env, KCACHE_STATE_DIR: path.join(p.dir, "s2"), CACHE_ROOT: path.join(p.dir, "c2") },
      cwd: p.dir,
      timeoutMs: 120_000,
    });
    expect(strict.code).toBe(3);
  });

  it("a pack whose bytes are not the ones its manifest names (same size, entries intact) warns, and --strict exits 3", async () => {
    const p = project();
    const entry = tritonKeyName("swapped-pack");
    const { packFile } = await plantPack({
      store: p.store,
      key: await keyOf(p),
      prefix: "trust",
      members: [{ type: "File", path: `triton/${entry}/k.so`, data: "fifteen bytes!!" }],
      entries: [{ name: entry, ...tiny }],
      trailer: emptyFrame(),
    });
    // Another pack of the same size whose tar is the same (the empty frame's window changed): only
    // the whole-pack digest can tell.
    const bytes = fs.readFileSync(packFile);
    bytes[bytes.length - 4] = (bytes[bytes.length - 4] as number) ^ 0x01;
    fs.writeFileSync(packFile, bytes);
    const lenient = await runCli(["restore"], { env: p.env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(/pack digest mismatch/);
    const strict = await runCli(["restore", "--strict"], {
      env: { ...p.env, CACHE_ROOT: path.join(p.dir, "c2"), KCACHE_STATE_DIR: path.join(p.dir, "s2") },
      cwd: p.dir,
    });
    expect(strict.code).toBe(3);
  });

  it("an entry with more files than its manifest lists is refused", async () => {
    const p = project();
    const entry = tritonKeyName("extra-files");
    const honest = entryDigest([["k.so", "fifteen bytes!!"]]);
    await plantPack({
      store: p.store,
      key: await keyOf(p),
      prefix: "trust",
      members: [
        { type: "File", path: `triton/${entry}/k.so`, data: "fifteen bytes!!" },
        { type: "File", path: `triton/${entry}/evil.so`, data: "" },
      ],
      entries: [{ name: entry, ...honest }],
    });
    const r = await runCli(["restore", "--json"], { env: p.env, cwd: p.dir });
    expect(JSON.parse(r.stdout)).toMatchObject({ entriesRestored: 0, entriesBad: 1 });
    expect(fs.existsSync(path.join(p.cache, entry))).toBe(false);
  });

  it("a dir cache never writes through a symlink already in the cache folder", async () => {
    const p = project({ yml: "" });
    fs.writeFileSync(
      path.join(p.dir, "kcache.yml"),
      `caches:\n  - name: pip\n    kind: dir\n    path: \${CACHE_ROOT}\nstore:\n  path: ${p.store}\nkey:\n  prefix: pip\n`,
    );
    const source = path.join(p.dir, "source");
    fs.mkdirSync(path.join(source, "sub"), { recursive: true });
    fs.writeFileSync(path.join(source, "sub", "file.txt"), "cached bytes");
    fs.writeFileSync(path.join(source, "top.txt"), "top");
    expect((await runCli(["save"], { env: { ...p.env, CACHE_ROOT: source }, cwd: p.dir })).code).toBe(0);

    const outside = path.join(p.dir, "outside");
    fs.mkdirSync(outside);
    fs.mkdirSync(p.cache);
    fs.symlinkSync(outside, path.join(p.cache, "sub"));
    const r = await runCli(["restore", "--json"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(0);
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.readFileSync(path.join(p.cache, "top.txt"), "utf8")).toBe("top");
    expect(JSON.parse(r.stdout)).toMatchObject({ entriesRestored: 1, entriesBad: 1 });
  });
});
