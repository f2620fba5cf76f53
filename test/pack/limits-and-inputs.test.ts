import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { corruptEntries, entryNames } from "../helpers/entry-compare.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { project } from "../helpers/project.js";

describe("resources bounded by what the manifest promises", () => {
  it("restores 3,000 small entries under a 256 open-file limit, every one of them", async () => {
    const p = project();
    const source = path.join(p.dir, "source");
    const r = rng(3);
    for (let i = 0; i < 3000; i++) writeKernelEntry(source, tritonKeyName(`many-${i}`), `k${i}`, 600, r);
    expect((await runCli(["save"], { env: { ...p.env, CACHE_ROOT: source }, cwd: p.dir })).code).toBe(0);
    const run = await runMeasured(["restore", "--strict", "--json"], {
      env: p.env,
      cwd: p.dir,
      ulimit: "-n 256",
    });
    expect(run.stderr).not.toMatch(/EMFILE|failed verification/);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ entriesRestored: 3000, entriesBad: 0 });
    expect(entryNames(p.cache)).toHaveLength(3000);
    expect(corruptEntries(source, p.cache)).toEqual([]);
  });
});

describe("bad input gets a clear error (exit 2), never a stack trace", () => {
  it.each([
    [
      "a folder given as the config",
      (p: ReturnType<typeof project>) => ["restore", "-c", p.dir],
      /is a folder, not a config file/,
    ],
    ["an empty --revision", () => ["restore", "--revision", ""], /--revision is empty/],
    [
      "a 600-character --revision",
      () => ["save", "--revision", "a".repeat(600)],
      /--revision is 600 characters; a revision is at most 100/,
    ],
    ["a revision with a comma", () => ["key", "--revision", "a,b"], /comma/],
  ])("%s", async (_what, args, message) => {
    const p = project();
    const r = await runCli(args(p), { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/internal error|at .*\.js:\d+/);
  });

  it("refuses a key prefix that would not fit a store's names, naming the field", async () => {
    const p = project({ prefix: "p".repeat(300) });
    const r = await runCli(["save"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/key\.prefix: is too long: at most 128 bytes/);
  });

  it("refuses two caches in one folder, or one inside another", async () => {
    const p = project();
    for (const [a, b] of [
      ["/tmp/x", "/tmp/x"],
      ["/tmp/x", "/tmp/x/inner"],
    ]) {
      fs.writeFileSync(
        path.join(p.dir, "kcache.yml"),
        `caches:\n  - {name: a, kind: triton, path: ${a}}\n  - {name: b, kind: dir, path: ${b}}\n`,
      );
      const r = await runCli(["key"], { env: p.env, cwd: p.dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/caches\[1\]\.path: .* (is the same folder as|overlaps) caches\[0\]\.path/);
    }
  });
});

describe("--strict means strict on restore", () => {
  it("a pack with one flipped byte: the entries it spoils are skipped with a warning (exit 0), or exit 3 with --strict", async () => {
    const p = project();
    const source = path.join(p.dir, "source");
    const r = rng(8);
    for (let i = 0; i < 20; i++) writeKernelEntry(source, tritonKeyName(`flip-${i}`), `k${i}`, 20_000, r);
    expect((await runCli(["save"], { env: { ...p.env, CACHE_ROOT: source }, cwd: p.dir })).code).toBe(0);
    const packs = fs
      .readdirSync(path.join(p.store, "packs"), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile());
    const file = path.join(packs[0]?.parentPath as string, packs[0]?.name as string);
    const bytes = fs.readFileSync(file);
    const mid = Math.floor(bytes.length / 2);
    bytes[mid] = (bytes[mid] as number) ^ 0xff;
    fs.writeFileSync(file, bytes);

    const lenient = await runCli(["restore"], { env: p.env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(/warning: restore of .* incomplete/);
    expect(corruptEntries(source, p.cache)).toEqual([]);
    const strict = await runCli(["restore", "--strict"], {
      env: { ...p.env, CACHE_ROOT: path.join(p.dir, "c2"), KCACHE_STATE_DIR: path.join(p.dir, "s2") },
      cwd: p.dir,
    });
    expect(strict.code).toBe(3);
    expect(corruptEntries(source, path.join(p.dir, "c2"))).toEqual([]);
  });
});
