import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { corruptEntries, entryNames } from "../helpers/entry-compare.js";
import { project } from "../helpers/project.js";
import { canMountTmpfs, mountTmpfs, resizeTmpfs } from "../helpers/tmpfs.js";

/** A project whose cache was saved from `source`; restores go to a 3 MB tmpfs. */
async function savedProject() {
  const p = project();
  const source = path.join(p.dir, "source");
  generateTritonCache(source, { entries: 40, totalBytes: 6_000_000 });
  const saved = await runCli(["save"], { env: { ...p.env, CACHE_ROOT: source }, cwd: p.dir });
  expect(saved.code).toBe(0);
  const small = path.join(p.dir, "small-disk");
  mountTmpfs(small, "3m");
  return { p, source, small, env: { ...p.env, CACHE_ROOT: small, KCACHE_STATE_DIR: path.join(p.dir, "s2") } };
}

describe.skipIf(!canMountTmpfs)("a full disk (a real size-limited tmpfs: runs as root only)", () => {
  it("never places a truncated file of a dir cache, whose entries are single files", async () => {
    const p = project({
      yml: "caches:\n  - name: pip\n    kind: dir\n    path: ${CACHE_ROOT}\nstore:\n  path: STORE\nkey:\n  prefix: pip\n",
    });
    fs.writeFileSync(
      path.join(p.dir, "kcache.yml"),
      fs.readFileSync(path.join(p.dir, "kcache.yml"), "utf8").replace("STORE", p.store),
    );
    const source = path.join(p.dir, "source");
    fs.mkdirSync(path.join(source, "wheels"), { recursive: true });
    for (let i = 0; i < 40; i++) {
      // Sizes off page boundaries, so the write that meets the full disk is cut mid-file.
      fs.writeFileSync(path.join(source, "wheels", `pkg-${i}.whl`), Buffer.alloc(150_000 + i * 7, i + 1));
    }
    expect((await runCli(["save"], { env: { ...p.env, CACHE_ROOT: source }, cwd: p.dir })).code).toBe(0);
    const small = path.join(p.dir, "small-disk");
    mountTmpfs(small, "3m");
    const env = { ...p.env, CACHE_ROOT: small, KCACHE_STATE_DIR: path.join(p.dir, "s2") };
    expect((await runCli(["restore"], { env, cwd: p.dir })).code).toBe(0);
    const placed = fs.readdirSync(path.join(small, "wheels"));
    expect(placed.length).toBeGreaterThan(0);
    expect(placed.length).toBeLessThan(40);
    const cut = placed.filter(
      (f) =>
        !fs
          .readFileSync(path.join(small, "wheels", f))
          .equals(fs.readFileSync(path.join(source, "wheels", f))),
    );
    expect(cut).toEqual([]);

    resizeTmpfs(small, "64m");
    expect((await runCli(["restore"], { env, cwd: p.dir })).code).toBe(0);
    for (const f of fs.readdirSync(path.join(source, "wheels")))
      expect(
        fs
          .readFileSync(path.join(small, "wheels", f))
          .equals(fs.readFileSync(path.join(source, "wheels", f))),
      ).toBe(true);
  });

  it("never places a truncated entry, and the next restore with room completes every entry", async () => {
    const { p, source, small, env } = await savedProject();
    const full = await runCli(["restore"], { env, cwd: p.dir });
    expect(full.code).toBe(0);
    expect(full.stderr).toMatch(/warning: restore of .* incomplete/);
    expect(corruptEntries(source, small)).toEqual([]);
    expect(entryNames(small).length).toBeLessThan(40);

    resizeTmpfs(small, "64m");
    const again = await runCli(["restore"], { env, cwd: p.dir });
    expect(again.code).toBe(0);
    expect(corruptEntries(source, small)).toEqual([]);
    expect(entryNames(small)).toEqual(entryNames(source));
  });

  it("exits 3 under --strict when the disk filled during a restore", async () => {
    const { p, source, small, env } = await savedProject();
    const strict = await runCli(["restore", "--strict"], { env, cwd: p.dir });
    expect(strict.code).toBe(3);
    expect(strict.stderr).toMatch(/kcache: error: restore met \d+ store or data fault/);
    expect(corruptEntries(source, small)).toEqual([]);
  });

  it("a save onto a full store warns and exits 0, exits 3 under --strict, and leaves nothing behind", async () => {
    const p = project();
    const storeDisk = path.join(p.dir, "store-disk");
    mountTmpfs(storeDisk, "1m");
    const store = path.join(storeDisk, "store");
    fs.writeFileSync(
      path.join(p.dir, "kcache.yml"),
      `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  path: ${store}\nkey:\n  prefix: full\n`,
    );
    generateTritonCache(p.cache, { entries: 30, totalBytes: 8_000_000 });
    const lenient = await runCli(["save"], { env: p.env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(/warning: save skipped: .*(ENOSPC|no space)/i);
    const strict = await runCli(["save", "--strict"], { env: p.env, cwd: p.dir });
    expect(strict.stderr).not.toMatch(/internal error/);
    expect(strict.code).toBe(3);
    expect(fs.existsSync(path.join(store, "manifests"))).toBe(false);
    expect(fs.readdirSync(path.join(store, ".tmp"))).toEqual([]);
  });
});
