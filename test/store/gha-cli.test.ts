import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { type GhaCacheServer, startGhaCacheServer } from "../helpers/gha-cache-server.js";
import { tempDir } from "../helpers/sandbox.js";

let server: GhaCacheServer;
beforeAll(async () => {
  server = await startGhaCacheServer();
});
afterAll(async () => {
  await server?.stop();
});

function runner(dir: string, name: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    PYTHONPATH: installedStack(),
    HOME: dir,
    ...server.env,
    KCACHE_STORE: "gha",
    KCACHE_GHA_DIR: path.join(dir, "gha"),
    TRITON_CACHE_DIR: path.join(dir, name, "triton"),
    RUNNER_TEMP: path.join(dir, name, "temp"),
    KCACHE_STATE_DIR: path.join(dir, name, "state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "9".repeat(40),
  };
}

describe("kcache with KCACHE_STORE=gha (v2 cache protocol on Azurite)", () => {
  it("saves on one runner and restores on another at another path, keeping --json output clean", async () => {
    const dir = tempDir("gha-cli");
    const a = runner(dir, "runner-a");
    generateTritonCache(a.TRITON_CACHE_DIR as string, { entries: 12, totalBytes: 600_000 });
    const saved = await runCli(["save", "--json"], { env: a, cwd: dir });
    expect(saved.code).toBe(0);
    expect(JSON.parse(saved.stdout)).toMatchObject({ outcome: "saved", entries: 12 });

    const b = runner(dir, "runner-b");
    const restored = await runCli(["restore", "--json"], { env: b, cwd: dir });
    expect(JSON.parse(restored.stdout)).toMatchObject({ cacheHit: true, entriesRestored: 12, entriesBad: 0 });
    expect(fs.readdirSync(b.TRITON_CACHE_DIR as string)).toHaveLength(12);

    // A later revision finds it by prefix, as actions/cache's restore-keys would.
    const c = { ...runner(dir, "runner-c"), GITHUB_SHA: "8".repeat(40) };
    const later = JSON.parse((await runCli(["restore", "--json"], { env: c, cwd: dir })).stdout);
    expect(later).toMatchObject({ cacheHit: false, entriesRestored: 12 });
    expect(later.matchedKey).toMatch(/9{40}$/);
    // One pack, one manifest, and the save's run record (for kcache stats).
    expect(server.calls.filter((m) => m === "CreateCacheEntry").length).toBe(3);

    // No REST token, so nothing can be listed: inspect asks for the key itself, as --lookup-only does.
    const key = JSON.parse(saved.stdout).primaryKey as string;
    const looked = await runCli(["restore", "--lookup-only", "--json"], { env: c, cwd: dir });
    expect(JSON.parse(looked.stdout).matchedKey).toBe(key);
    const inspected = await runCli(["inspect", key], { env: c, cwd: dir });
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(inspected.stdout).toContain(`key       ${key}`);
    expect(inspected.stdout).toMatch(/caches\s+triton \(triton\): 12 entries/);
  });

  it("with the cache service down, restore is a miss and save a skip, each with one warning", async () => {
    const dir = tempDir("gha-down");
    const env: NodeJS.ProcessEnv = { ...runner(dir, "r"), ACTIONS_RESULTS_URL: "http://127.0.0.1:1/" };
    generateTritonCache(env.TRITON_CACHE_DIR as string, { entries: 3, totalBytes: 60_000 });
    for (const cmd of ["restore", "save"]) {
      const r = await runCli([cmd], { env, cwd: dir });
      expect(r.code).toBe(0);
      expect(r.stderr.match(/::warning/g)).toHaveLength(1);
      expect(r.stderr).toMatch(new RegExp(`::warning title=kcache::${cmd} skipped: GitHub cache: .*failed`));
    }
  });
});
