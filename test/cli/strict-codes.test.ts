import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";

/** A project whose one saved key has a damaged manifest (a byte of its body changed). */
async function damagedManifest() {
  const p = project();
  generateTritonCache(p.cache, { entries: 4, totalBytes: 60_000 });
  expect((await runCli(["save"], { env: p.env, cwd: p.dir })).code).toBe(0);
  const dir = path.join(p.store, "manifests");
  const file = fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .find((d) => d.isFile()) as fs.Dirent;
  const at = path.join(file.parentPath, file.name);
  fs.writeFileSync(at, fs.readFileSync(at, "utf8").replace('"trust"', '"trusT"'));
  // Another runner: nothing of the save on its disk.
  const env = { ...p.env, CACHE_ROOT: path.join(p.dir, "other"), KCACHE_STATE_DIR: path.join(p.dir, "s2") };
  return { p, env };
}

describe("--strict [codes] (docs/cli.md#faults)", () => {
  it("a damaged manifest is a manifest-damaged fault: a warning, exit 3 under --strict or --strict naming it", async () => {
    const { p, env } = await damagedManifest();
    const lenient = await runCli(["restore", "--json"], { env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(JSON.parse(lenient.stdout).faults).toEqual([
      { code: "manifest-damaged", message: expect.stringMatching(/manifest digest mismatch/) },
    ]);
    expect((await runCli(["restore", "--strict"], { env, cwd: p.dir })).code).toBe(3);
    const named = await runCli(["restore", "--strict", "manifest-damaged,disk-failed"], { env, cwd: p.dir });
    expect(named.code).toBe(3);
    expect(named.stderr).toMatch(/manifest-damaged: .*manifest digest mismatch/);
    expect((await runCli(["restore", "--strict=manifest-damaged"], { env, cwd: p.dir })).code).toBe(3);
  });

  it("--strict naming other codes lets the fault warn: exit 0", async () => {
    const { p, env } = await damagedManifest();
    const r = await runCli(["restore", "--strict", "entry-bad,disk-failed"], { env, cwd: p.dir });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: .*manifest digest mismatch/);
  });

  it("an unknown code is a usage error (exit 2) that lists the codes", async () => {
    const p = project();
    const r = await runCli(["restore", "--strict=disk-ful"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /--strict disk-ful: no fault is called disk-ful; give true, false or codes from: .*disk-failed/,
    );
  });

  it("a word after --strict that is no fault code is refused as one (exit 2), not taken for something else", async () => {
    const p = project();
    const r = await runCli(["save", "--strict", "bench"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--strict bench: no fault is called bench/);
  });
});
