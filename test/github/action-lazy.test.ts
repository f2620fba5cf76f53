import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { actionForTests, RunnerJob } from "../helpers/action-runner.js";
import { runCli } from "../helpers/cli.js";
import { startGhaCacheServer } from "../helpers/gha-cache-server.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

const ACTION = actionForTests("action-lazy");

const PUSH = { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" };

/** A project on a local store (with `store` lines more), or on GitHub's cache service ("gha"). */
function project(store: string[] | "gha") {
  const root = tempDir("action-lazy");
  fs.writeFileSync(
    path.join(root, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      "    path: ${RUNNER_TEMP}/triton-cache",
      ...(store === "gha"
        ? ["store:", "  type: gha"]
        : ["store:", `  path: ${path.join(root, "store")}`, ...store]),
      "key:",
      "  prefix: kernels",
      "",
    ].join("\n"),
  );
  return root;
}

/**
 * The simulated Triton workload as a `run:` step that puts its own folder on PYTHONPATH before
 * what earlier steps exported (kcache's hook), as a step that sets PYTHONPATH must.
 */
async function workload(job: RunnerJob, args: string[]) {
  const exported = job.stepEnv().PYTHONPATH;
  const out = await job.runAsync("python3", [path.join(SIM, "workload.py"), ...args], {
    PYTHONPATH: `${SIM}${exported ? `${path.delimiter}${exported}` : ""}`,
    TRITON_SIM_COMPILE_MS: "1",
  });
  return JSON.parse(out.trim().split("\n").at(-1) as string) as { compiled: number; loaded: number };
}

/** Every runner job of the test, whose leftover processes end with it (as the runner ends a job's). */
const jobs: RunnerJob[] = [];
afterEach(() => {
  for (const j of jobs.splice(0)) j.killOrphans();
});
const runner = (root: string, name: string, sha: string, env: Record<string, string> = {}) => {
  const j = new RunnerJob(root, name, { ...PUSH, GITHUB_SHA: sha.repeat(40), ...env }, ACTION);
  jobs.push(j);
  return j;
};

describe("the action's restore step serves lookups until the save (restore: lazy, store.live)", () => {
  it("a lazy restore leaves entries in the store, later steps fetch what they look up, and the job compiles 0", async () => {
    const root = await keyNobodyUsed(project([]));
    const c = runner(root, "c", "c");
    const restored = await c.uses("", LAZY);
    expect(restored.code).toBe(0);
    expect(restored.log).toMatch(
      /serving the job's lookups until the save step \([1-9]\d* entries left in the store/,
    );
    const socket = c.stepEnv().KCACHE_LAZY_SOCKET as string;
    expect(fs.existsSync(socket)).toBe(true);
    // Nothing was placed ahead: every entry the workload loads comes from the store when looked up.
    const cacheDir = path.join(c.dir, "temp", "triton-cache");
    expect(fs.readdirSync(cacheDir).filter((n) => fs.readdirSync(path.join(cacheDir, n)).length)).toEqual([]);
    const warm = await workload(c, ["6", "2"]);
    expect(warm).toMatchObject({ compiled: 0 });
    expect(warm.loaded).toBeGreaterThan(0);
    const [post] = await c.end();
    expect(post?.result?.code).toBe(0);
    expect(post?.result?.log).toMatch(
      /lazy restore: 0 entries fetched ahead, [1-9]\d* fetched when looked up/,
    );
    // The serving process is gone with its socket (within the moment it takes to leave).
    expect(fs.existsSync(socket)).toBe(false);
    await waitFor(() => c.processes().length === 0, 120_000);
    const stats = await runCli(["stats", "--json", "--config", path.join(root, "kcache.yml")], {
      env: { ...c.stepEnv(), PYTHONPATH: "" },
      cwd: root,
    });
    expect(stats.code, stats.stderr).toBe(0);
    const week = JSON.parse(stats.stdout).weeks.find((w: { lazy?: unknown }) => w.lazy);
    expect(week.lazy.onDemand).toBeGreaterThan(0);
    expect(week.lazy.prefetched).toBe(0);
  });

  it("the serving process killed -9 mid-job: the job compiles what it could not fetch, and the save warns and keeps the key whole", async () => {
    const root = await keyNobodyUsed(project([]));
    const c = runner(root, "c", "c");
    await c.uses("", LAZY);
    const pid = servingProcess(c);
    expect(pid).not.toBeNull();
    process.kill(pid as number, "SIGKILL");
    const cold = await workload(c, ["6", "2"]);
    expect(cold.compiled).toBeGreaterThan(0);
    const [post] = await c.end();
    expect(post?.result?.code).toBe(0);
    expect(post?.result?.log).toMatch(/lookup service did not answer when asked to stop/);
    // The next job finds every entry of the key: none was dropped for want of a fetch.
    const d = runner(root, "d", "d");
    await d.uses("", LAZY);
    expect((await workload(d, ["6", "2"])).compiled).toBe(0);
    await d.end();
  });

  it("on GitHub's cache service: each entry looked up is a ranged blob download, and the job compiles 0", async () => {
    const gha = await startGhaCacheServer();
    try {
      const root = await keyNobodyUsed(project("gha"), gha.env);
      const c = runner(root, "c", "c", gha.env);
      expect((await c.uses("", LAZY)).log).toMatch(
        /serving the job's lookups until the save step \([1-9]\d* entries/,
      );
      expect(await workload(c, ["6", "2"])).toMatchObject({ compiled: 0 });
      const [post] = await c.end();
      expect(post?.result?.log).toMatch(
        /lazy restore: 0 entries fetched ahead, [1-9]\d* fetched when looked up/,
      );
      expect(post?.result?.log).not.toMatch(/::warning/);
      await waitFor(() => c.processes().length === 0, 120_000);
    } finally {
      await gha.stop();
    }
  });

  it("without lazy, restore and save steps say nothing of lookups and serve none; the hook is exported all the same, recording the job's writes", async () => {
    const root = project([]);
    const a = runner(root, "a", "a");
    const r = await a.uses("", { config: "kcache.yml" });
    expect(r.log).not.toMatch(/serving the job's lookups/);
    expect(a.stepEnv().KCACHE_LAZY_SOCKET).toBeUndefined();
    expect(a.stepEnv().PYTHONPATH).toMatch(/kcache_hook/);
    expect(a.stepEnv().KCACHE_TELEMETRY_FILE).toBeTruthy();
  });

  it("store.live: a kernel runner A compiled loads on runner B before A saved, and A's save keys it", async () => {
    const root = project(["  live: true"]);
    const a = runner(root, "a", "a");
    const restoredA = await a.uses("", { config: "kcache.yml" });
    expect(restoredA.log).toMatch(/kernels the job compiles are shared live/);
    expect((await workload(a, ["4", "0"])).compiled).toBe(4);
    // A's entries settle and are shared within a second of their last write.
    await waitFor(() => fs.existsSync(path.join(root, "store", "live")) && liveRecords(root) >= 4, 120_000);

    const b = runner(root, "b", "b");
    await b.uses("", { config: "kcache.yml" });
    expect(await workload(b, ["4", "0"])).toMatchObject({ compiled: 0, loaded: 4 });
    const [postB] = await b.end();
    expect(postB?.result?.log).toMatch(/live: [1-9]\d* entries found shared by other jobs, 0 shared/);
    // Every entry B has came from A live: B's save keys none of them (A's will, once A passed).
    expect(postB?.result?.log).toMatch(
      /nothing of its own: the [1-9]\d* entries in the caches came from other jobs live/,
    );
    const [postA] = await a.end();
    expect(postA?.result?.log).toMatch(/saved/);
    expect(postA?.result?.log).toMatch(/live: 0 entries found shared by other jobs, [1-9]\d* shared/);
  });
});

const LAZY = { config: "kcache.yml", lazy: "true" };

/** A project whose key holds 6 kernels and 2 autotuned ones, none of them used by the job that saved it last. */
async function keyNobodyUsed(root: string, env: Record<string, string> = {}): Promise<string> {
  const a = runner(root, "a", "a", env);
  await a.uses("", LAZY);
  // A miss leaves nothing in the store to serve: the process the restore step started leaves at once.
  await waitFor(() => a.processes().length === 0, 120_000);
  expect((await workload(a, ["6", "2"])).compiled).toBeGreaterThan(0);
  expect((await a.end())[0]?.result?.log).toMatch(/saved/);
  // A job that used none of the key's entries: its save keeps them all, used by nobody lately.
  const idle = runner(root, "idle", "b", env);
  await idle.uses("", LAZY);
  expect((await idle.end())[0]?.result?.code).toBe(0);
  return root;
}

/** The process serving a runner's lookups, found by the variables it was started with. */
function servingProcess(job: RunnerJob): number | null {
  for (const pid of fs.readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    let env = "";
    try {
      env = fs.readFileSync(`/proc/${pid}/environ`, "utf8");
    } catch {
      continue;
    }
    const vars = env.split("\0");
    if (
      vars.some((v) => v.startsWith("KCACHE_LOOKUP_DAEMON=")) &&
      vars.includes(`RUNNER_TEMP=${path.join(job.dir, "temp")}`)
    )
      return Number(pid);
  }
  return null;
}

function liveRecords(root: string): number {
  return fs
    .readdirSync(path.join(root, "store", "live"), { recursive: true })
    .filter((n) => String(n).endsWith(".json")).length;
}

async function waitFor(cond: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}
