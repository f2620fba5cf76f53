import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { ROOT, RunnerJob } from "../helpers/action-runner.js";
import { downloadedAction, node24, pathWithoutZstd } from "../helpers/bare-runner.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { type GhaCacheServer, startGhaCacheServer } from "../helpers/gha-cache-server.js";
import { tempDir } from "../helpers/sandbox.js";
import { Tally } from "./harness.js";

/**
 * kcache the way a user gets it, where the machine lacks what a bare container lacks: the action as
 * a runner downloads it (tracked files only: no node_modules, no build/) and the CLI from its packed
 * package installed into an empty folder, each with no `zstd` on PATH, on Node 20 and on Node 24.
 */
let gha: GhaCacheServer;
let shared: string;
let action: string;
let bare: string;
const NODES: [string, () => string][] = [
  ["Node 20", () => process.execPath],
  ["Node 24", node24],
];
beforeAll(async () => {
  gha = await startGhaCacheServer();
  // Not tempDir: that is emptied after each test, and these serve every test of the file.
  shared = fs.mkdtempSync(path.join(os.tmpdir(), "as-downloaded-"));
  action = downloadedAction(shared);
  bare = pathWithoutZstd(shared);
});
afterAll(async () => {
  await gha?.stop();
  if (shared) fs.rmSync(shared, { recursive: true, force: true });
});

const SIM = path.join(ROOT, "demo", "sim");
const push = (sha: string) => ({ GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main", GITHUB_SHA: sha });

function workload(job: RunnerJob): { compiled: number; loaded: number } {
  const out = job.run("python3", [path.join(SIM, "workload.py"), "3", "1"], {
    PYTHONPATH: SIM,
    TRITON_SIM_COMPILE_MS: "1",
  });
  return JSON.parse(out.trim().split("\n").at(-1) as string) as { compiled: number; loaded: number };
}

/** Files under `dir` as name -> size, to see whether a run wrote into the downloaded action. */
function listing(dir: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(`${path.relative(dir, p)}:${fs.statSync(p).size}`);
    }
  };
  walk(dir);
  return out.sort().join("\n");
}

describe("kcache as a runner downloads it, with no zstd binary", () => {
  it.each(NODES)(
    "the action as downloaded (git archive, no node_modules), %s, no zstd on PATH: two jobs with fresh homes, warm through GitHub's cache",
    async (label, nodeBin) => {
      const node = nodeBin();
      const tally = new Tally(`as downloaded: the action, ${label}, no zstd, GitHub's cache`);
      const root = tempDir("dl-action");
      const before = listing(action);
      const bundle = path.join(action, "dist", "action.mjs");
      const env = { ...gha.env, PATH: bare };
      const inputs = { path: "~/.triton/cache", key: `triton-${label.replace(" ", "")}` };
      const timed = async <T extends { code: number | null }>(f: () => Promise<T>): Promise<T> => {
        const t0 = performance.now();
        const r = await f();
        tally.run({ code: r.code, seconds: (performance.now() - t0) / 1000, peakRssMb: null });
        return r;
      };

      const a = new RunnerJob(root, "job-a", { ...push("a".repeat(40)), ...env }, bundle, root, node);
      const miss = await timed(() => a.uses("", inputs));
      expect(miss.code, miss.log).toBe(0);
      expect(miss.outputs["cache-hit"]).toBe("false");
      expect(miss.log).toContain("(GitHub Actions cache)");
      expect(workload(a).compiled).toBeGreaterThan(0);
      const [postA] = await a.end();
      tally.run({ code: postA?.result?.code ?? null, seconds: 0, peakRssMb: null });
      expect(postA?.result?.code, postA?.result?.log).toBe(0);
      expect(postA?.result?.log).toMatch(/saved triton-Node\d+-.* \(GitHub Actions cache\)/);
      expect(postA?.result?.log).not.toMatch(/::warning/);

      // Another job: a fresh home folder (the cache at another path) and a later revision.
      const b = new RunnerJob(root, "job-b", { ...push("b".repeat(40)), ...env }, bundle, root, node);
      const hit = await timed(() => b.uses("", inputs));
      expect(hit.code, hit.log).toBe(0);
      expect(hit.outputs["cache-matched-key"]).toBe(miss.outputs["cache-primary-key"]);
      expect(hit.log).toMatch(/restored \d+ entries from .* of GitHub Actions cache/);
      expect(hit.log).not.toMatch(/::warning/);
      const warm = workload(b);
      if (warm.compiled !== 0) tally.row.corruptRestores++;
      expect(warm).toMatchObject({ compiled: 0 });
      expect(warm.loaded).toBeGreaterThan(0);
      const [postB] = await b.end();
      expect(postB?.result?.code).toBe(0);
      expect(postB?.result?.log).toMatch(/nothing new since/);

      // The downloaded action is only read.
      if (listing(action) !== before) tally.row.writesOutside++;
      expect(listing(action)).toBe(before);
      tally.row.trials = 1;
      tally.save();
    },
  );

  it("the action as downloaded in actions/cache's placement (the cache step before the install): the post step saves under the restore's key and the next run's restore finds it", async () => {
    const root = tempDir("dl-before-install");
    const bundle = path.join(action, "dist", "action.mjs");
    const inputs = { path: "~/.triton/cache", key: "placement" };
    const run = async (name: string) => {
      const site = tempDir("dl-no-torch-yet"); // the runner's Python before `pip install`
      const j = new RunnerJob(root, name, { ...push("c".repeat(40)), ...gha.env, PATH: bare }, bundle, root);
      j.env.PYTHONPATH = site;
      const restored = await j.uses("", inputs);
      expect(restored.code, restored.log).toBe(0);
      // The job's install step, after the cache step: packages land in the site folder, as pip's do
      // (PYTHONPATH itself is the restore step's now: kcache's hook first).
      fs.cpSync(installedStack(), site, { recursive: true });
      const work = workload(j);
      const [post] = await j.end();
      expect(post?.result?.code, post?.result?.log).toBe(0);
      return { restored, work, post: post?.result?.log ?? "" };
    };
    const first = await run("first");
    const key = first.restored.outputs["cache-primary-key"] as string;
    expect(key).toMatch(/^placement-[0-9a-f]{12}-c{40}$/);
    expect(first.post).toContain(`saved ${key}:`);
    expect(first.post).not.toMatch(/c{40}-[0-9a-f]{12}-c{40}/);
    expect(first.post).toMatch(/::warning.*put the kcache step after the install/);
    const second = await run("second");
    expect(second.restored.outputs).toMatchObject({ "cache-hit": "true", "cache-matched-key": key });
    expect(second.work).toMatchObject({ compiled: 0 });
  });

  it.each(NODES)(
    "the packed CLI (npm pack, installed offline into an empty folder, no optional addon), %s, no zstd on PATH: save and restore at another path",
    async (label, nodeBin) => {
      const node = nodeBin();
      const tally = new Tally(`as downloaded: the packed CLI, ${label}, no zstd, local store`);
      const dir = tempDir("dl-cli");
      const tgz = packedCli(shared);
      const app = path.join(dir, "app");
      fs.mkdirSync(app);
      fs.writeFileSync(path.join(app, "package.json"), '{"name":"app","private":true}\n');
      const npmEnv = { ...process.env, npm_config_cache: path.join(dir, "npm-cache") };
      execFileSync("npm", ["install", "--offline", "--omit=optional", "--no-audit", "--no-fund", tgz], {
        cwd: app,
        env: npmEnv,
      });
      const bin = path.join(app, "node_modules", "kcache", "bin", "kcache.js");
      const source = path.join(dir, "runner-a", "cache");
      generateTritonCache(source, { entries: 24, totalBytes: 6_000_000, seed: 11 });
      const env = {
        PATH: bare,
        PYTHONPATH: installedStack(),
        HOME: dir,
        GITHUB_SHA: "c".repeat(40),
        GITHUB_REF: "refs/heads/main",
        KCACHE_STATE_DIR: path.join(dir, "state"),
      };
      const kcache = (args: string[], extra: Record<string, string> = {}) => {
        const t0 = performance.now();
        const r = spawnSync(node, [bin, ...args], { env: { ...env, ...extra }, cwd: dir, encoding: "utf8" });
        tally.run({ code: r.status, seconds: (performance.now() - t0) / 1000, peakRssMb: null });
        return r;
      };
      const store = path.join(dir, "store");
      const saved = kcache(["save", "--path", source, "--key", "cli", "--store", store]);
      expect(saved.status, saved.stderr).toBe(0);
      expect(saved.stderr).toMatch(/saved cli-.*: 24 new entries.*\(local store /);
      expect(saved.stderr).not.toMatch(/warning/);
      const target = path.join(dir, "runner-b", "cache");
      const restored = kcache(["restore", "--path", target, "--key", "cli", "--store", store], {
        KCACHE_STATE_DIR: path.join(dir, "state-b"),
      });
      expect(restored.status, restored.stderr).toBe(0);
      expect(restored.stderr).toMatch(/restored 24 entries .* of local store /);
      const bad = corruptEntries(source, target);
      tally.row.corruptRestores += bad.length;
      expect(bad).toEqual([]);
      tally.row.trials = 1;
      tally.save();
    },
  );

  it("no Zstandard engine at all (KCACHE_ZSTD=system, no zstd on PATH): one warning naming the fix, restore a miss, save skipped, exit 0 (3 under --strict), never a hang", () => {
    const tally = new Tally("as downloaded: no Zstandard engine at all");
    const dir = tempDir("no-engine");
    const source = path.join(dir, "cache");
    generateTritonCache(source, { entries: 12, totalBytes: 1_000_000, seed: 3 });
    const store = path.join(dir, "store");
    const base = {
      PATH: process.env.PATH,
      PYTHONPATH: installedStack(),
      HOME: dir,
      GITHUB_SHA: "e".repeat(40),
      GITHUB_REF: "refs/heads/main",
      KCACHE_STATE_DIR: path.join(dir, "state"),
    };
    const kcache = (args: string[], extra: NodeJS.ProcessEnv) => {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, [path.join(ROOT, "bin", "kcache.js"), ...args], {
        env: { ...base, ...extra },
        cwd: dir,
        encoding: "utf8",
        timeout: 120_000,
      });
      const seconds = (performance.now() - t0) / 1000;
      tally.run({ code: r.status, seconds, peakRssMb: null });
      return { ...r, seconds };
    };
    const args = (cmd: string) => [cmd, "--path", source, "--key", "none", "--store", store];
    // A key to restore, saved where an engine works.
    expect(kcache(args("save"), {}).status).toBe(0);
    fs.rmSync(path.join(dir, "state"), { recursive: true, force: true });
    const none = { PATH: bare, KCACHE_ZSTD: "system" };
    for (const cmd of ["restore", "save"]) {
      const r = kcache([...args(cmd), "--revision", "f".repeat(40)], none);
      expect(r.status, r.stderr).toBe(0);
      expect(r.seconds).toBeLessThan(60);
      const warnings = r.stderr.split("\n").filter((l) => l.includes("warning"));
      expect(warnings, r.stderr).toHaveLength(1);
      expect(warnings[0]).toMatch(/no Zstandard engine works here .*no zstd on PATH.*Fix: install zstd/);
      const strict = kcache([...args(cmd), "--revision", "f".repeat(40), "--strict"], none);
      expect(strict.status, strict.stderr).toBe(3);
      expect(strict.stderr).toMatch(/install zstd/);
    }
    tally.row.trials = 2;
    tally.save();
  });
});

let packed: string | undefined;
/** `npm pack` of this checkout (built by the suite's setup), once per file. */
function packedCli(dir: string): string {
  if (packed) return packed;
  const out = path.join(dir, "pack");
  fs.mkdirSync(out, { recursive: true });
  const name = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", out], {
    cwd: ROOT,
  })
    .toString()
    .trim()
    .split("\n")
    .at(-1) as string;
  packed = path.join(out, name);
  return packed;
}
