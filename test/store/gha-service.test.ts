import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ghaStore } from "../../src/store/gha.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { type GhaCacheServer, startGhaCacheServer } from "../helpers/gha-cache-server.js";
import { tempDir } from "../helpers/sandbox.js";

/** The "GitHub cache service" here is the v2 Twirp protocol and REST caches API on Azurite (test/helpers/gha-cache-server.ts). */
let server: GhaCacheServer;
beforeAll(async () => {
  server = await startGhaCacheServer();
});
afterAll(async () => {
  await server?.stop();
});

const REV1 = "1".repeat(40);
const REV2 = "2".repeat(40);

/** A runner's environment for a run of `ref` (a pull request reads its base branch too). */
function runner(
  dir: string,
  name: string,
  ref = "refs/heads/main",
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  const pr = /^refs\/pull\/(\d+)\//.exec(ref);
  // Each test its own key prefix: they share one server.
  const config = path.join(dir, "kcache.yml");
  if (!fs.existsSync(config))
    fs.writeFileSync(
      config,
      `caches:\n  - name: triton\n    kind: triton\n    path: \${TRITON_CACHE_DIR}\nkey:\n  prefix: ${path.basename(dir).replace(/[^A-Za-z0-9-]/g, "-")}\n`,
    );
  return {
    PATH: process.env.PATH,
    HOME: dir,
    ...server.env,
    ACTIONS_RUNTIME_TOKEN: server.tokenFor(ref, pr ? ["refs/heads/main"] : []),
    KCACHE_STORE: "gha",
    TRITON_CACHE_DIR: path.join(dir, name, "triton"),
    RUNNER_TEMP: path.join(dir, name, "temp"),
    KCACHE_STATE_DIR: path.join(dir, name, "state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: ref,
    GITHUB_EVENT_NAME: pr ? "pull_request" : "push",
    ...(pr ? { GITHUB_BASE_REF: "main" } : {}),
    GITHUB_SHA: REV1,
    ...extra,
  };
}
const json = (r: { stdout: string }) => JSON.parse(r.stdout);

describe("the gha store against GitHub's cache semantics", () => {
  it("never lets main see a pull request's entries; the pull request reads main's", async () => {
    const dir = tempDir("gha-scope");
    const main = runner(dir, "main");
    generateTritonCache(main.TRITON_CACHE_DIR as string, { entries: 6, totalBytes: 200_000, seed: 1 });
    expect(json(await runCli(["save", "--json"], { env: main, cwd: dir })).outcome).toBe("saved");

    // The pull request restores main's cache, compiles more, saves into its own scope.
    const pr = runner(dir, "pr", "refs/pull/5/merge", { GITHUB_SHA: REV2 });
    const prRestore = json(await runCli(["restore", "--json"], { env: pr, cwd: dir }));
    expect(prRestore).toMatchObject({ entriesRestored: 6 });
    generateTritonCache(pr.TRITON_CACHE_DIR as string, { entries: 3, totalBytes: 100_000, seed: 9 });
    const prSave = json(await runCli(["save", "--json"], { env: pr, cwd: dir }));
    expect(prSave).toMatchObject({ outcome: "saved", scope: "pr/5" });
    const prEntries = [...server.entries.values()].filter((e) => e.scope === "refs/pull/5/merge");
    expect(prEntries.length).toBeGreaterThan(0);

    // Main at the pull request's revision: a miss of the exact key, main's own cache by prefix.
    const later = runner(dir, "main-2", "refs/heads/main", { GITHUB_SHA: REV2 });
    const r = json(await runCli(["restore", "--json"], { env: later, cwd: dir }));
    expect(r.cacheHit).toBe(false);
    expect(r.matchedKey).toMatch(/1{40}$/);
    expect(r.entriesRestored).toBe(6);
    // Not even by the exact object names: the service keeps them to the pull request's scope.
    const mainStore = ghaStore({
      timeoutMs: 60_000,
      env: { ...server.env, ACTIONS_RUNTIME_TOKEN: server.tokenFor("refs/heads/main") },
    });
    const prStore = ghaStore({
      timeoutMs: 60_000,
      env: { ...server.env, ACTIONS_RUNTIME_TOKEN: pr.ACTIONS_RUNTIME_TOKEN },
    });
    for (const e of prEntries) {
      const name = e.key.slice("kcache/".length);
      expect(await prStore.exists(name)).toBe(true);
      expect(await mainStore.exists(name)).toBe(false);
    }
  });

  it("shares a key between a runner with system zstd and one without, both ways, uploading packs as they are", async () => {
    const dir = tempDir("gha-zstd");
    const a = runner(dir, "a", "refs/heads/main", { KCACHE_ZSTD: "napi" });
    generateTritonCache(a.TRITON_CACHE_DIR as string, { entries: 8, totalBytes: 300_000, seed: 3 });
    expect(json(await runCli(["save", "--json"], { env: a, cwd: dir })).outcome).toBe("saved");
    const b = runner(dir, "b", "refs/heads/main", { KCACHE_ZSTD: "system", GITHUB_SHA: REV2 });
    expect(json(await runCli(["restore", "--json"], { env: b, cwd: dir }))).toMatchObject({
      entriesRestored: 8,
      entriesBad: 0,
    });
    generateTritonCache(b.TRITON_CACHE_DIR as string, { entries: 4, totalBytes: 100_000, seed: 4 });
    expect(json(await runCli(["save", "--json"], { env: b, cwd: dir })).outcome).toBe("saved");
    const c = runner(dir, "c", "refs/heads/main", { KCACHE_ZSTD: "napi", GITHUB_SHA: REV2 });
    expect(json(await runCli(["restore", "--json"], { env: c, cwd: dir }))).toMatchObject({
      cacheHit: true,
      entriesRestored: 12,
      entriesBad: 0,
    });
    // One version for every entry, whatever the runner has installed.
    expect(new Set([...server.entries.values()].map((e) => e.version)).size).toBe(1);
  });

  it("skips a key whose pack was evicted and restores the next candidate whole, never a part", async () => {
    const dir = tempDir("gha-evict");
    const rest = {
      GITHUB_TOKEN: "rest-token",
      GITHUB_REPOSITORY: "org/repo",
      GITHUB_API_URL: server.env.ACTIONS_RESULTS_URL,
    };
    const first = runner(dir, "first", "refs/heads/main", rest);
    generateTritonCache(first.TRITON_CACHE_DIR as string, { entries: 5, totalBytes: 150_000, seed: 11 });
    await runCli(["save"], { env: first, cwd: dir });
    const second = runner(dir, "first", "refs/heads/main", { ...rest, GITHUB_SHA: REV2 });
    generateTritonCache(second.TRITON_CACHE_DIR as string, { entries: 3, totalBytes: 90_000, seed: 12 });
    const s2 = json(await runCli(["save", "--json"], { env: second, cwd: dir }));
    expect(s2).toMatchObject({ outcome: "saved", entriesNew: 3, entriesReused: 5 });
    // GitHub evicts the second save's own pack.
    const newest = [...server.entries.values()].filter(
      (e) => e.key.includes("/packs/") || e.key.includes("packs/"),
    );
    const evicted = newest.sort((x, y) => y.createdAt - x.createdAt)[0] as { key: string };
    expect(server.evict(evicted.key)).toBe(1);

    const fresh = runner(dir, "fresh", "refs/heads/main", { ...rest, GITHUB_SHA: REV2 });
    const r = json(await runCli(["restore", "--json"], { env: fresh, cwd: dir }));
    expect(r).toMatchObject({ cacheHit: false, entriesRestored: 5, entriesBad: 0 });
    expect(r.matchedKey).toMatch(/1{40}$/);
    expect(fs.readdirSync(fresh.TRITON_CACHE_DIR as string)).toHaveLength(5);

    // Without a REST token the newest key is all a lookup sees: a clean miss, not a partial restore.
    const noToken = runner(dir, "no-token", "refs/heads/main", { GITHUB_SHA: REV2 });
    const m = json(await runCli(["restore", "--json"], { env: noToken, cwd: dir }));
    expect(m).toMatchObject({ matchedKey: null, entriesRestored: 0 });
  });

  it("lists and prunes through GitHub's REST API with a token, and says what is missing without one", async () => {
    const dir = tempDir("gha-rest");
    const rest = {
      GITHUB_TOKEN: "rest-token",
      GITHUB_REPOSITORY: "org/repo",
      GITHUB_API_URL: server.env.ACTIONS_RESULTS_URL,
    };
    const env = runner(dir, "r", "refs/heads/main", rest);
    generateTritonCache(env.TRITON_CACHE_DIR as string, { entries: 4, totalBytes: 80_000, seed: 21 });
    await runCli(["save"], { env, cwd: dir });
    const ls = await runCli(["ls", "--json", "--prefix", path.basename(dir).replace(/[^A-Za-z0-9-]/g, "-")], {
      env,
      cwd: dir,
    });
    expect(ls.code).toBe(0);
    expect(json(ls).keys).toHaveLength(1);
    const before = server.entries.size;
    const pruned = await runCli(["prune", "--keep", "0", "--json"], { env, cwd: dir });
    expect(pruned.code).toBe(0);
    expect(server.entries.size).toBeLessThan(before);

    const bare = { ...env, GITHUB_TOKEN: "" };
    const noLs = await runCli(["ls"], { env: bare, cwd: dir });
    expect(noLs.code).toBe(2);
    expect(noLs.stderr).toMatch(/GITHUB_TOKEN .*actions: write.*GITHUB_REPOSITORY/);
  });
});

describe("the test server's eviction", () => {
  it("evicts the least recently used entries once the repository is over its size cap", async () => {
    const capped = await startGhaCacheServer({ capBytes: 1_000_000 });
    try {
      const store = ghaStore({ timeoutMs: 60_000, env: { ...capped.env } });
      const blob = (n: number) => Buffer.alloc(300_000, n);
      for (const name of ["packs/a", "packs/b", "packs/c"])
        expect(await store.createIfAbsent(name, blob(1))).toBe(true);
      expect(await store.read("packs/a")).not.toBeNull(); // a is used again: b is now the least recent
      expect(await store.createIfAbsent("packs/d", blob(2))).toBe(true);
      expect(await store.exists("packs/a")).toBe(true);
      expect(await store.exists("packs/b")).toBe(false);
      expect(await store.exists("packs/c")).toBe(true);
      expect(await store.exists("packs/d")).toBe(true);
    } finally {
      await capped.stop();
    }
  });
});
