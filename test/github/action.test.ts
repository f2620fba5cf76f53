import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Inputs, Outputs, SAVE_ALWAYS_ENV } from "../../src/github/io-names.js";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { actionForTests, actionYml, bundleAction, ROOT, RunnerJob } from "../helpers/action-runner.js";
import { type GhaCacheServer, startGhaCacheServer } from "../helpers/gha-cache-server.js";
import { tempDir } from "../helpers/sandbox.js";

const DIST_ACTION = path.join(ROOT, "dist", "action.mjs");
/**
 * The behaviour tests run the action bundled from src/, not the committed dist/: a change in src/ is
 * caught by a behaviour test, and the staleness test below says when dist/ must be rebuilt. Beside
 * dist/action.mjs, so it finds python/ and package.json as the shipped action does (ignored by git).
 */
const ACTION = actionForTests("action");
let gha: GhaCacheServer;
beforeAll(async () => {
  gha = await startGhaCacheServer();
});
afterAll(async () => {
  await gha?.stop();
});
const SIM = path.join(ROOT, "demo", "sim");
const PUSH = { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main", GITHUB_SHA: "a".repeat(40) };

/** The simulated Triton workload as a job's `run:` step; returns kernels compiled and loaded. */
function workload(job: RunnerJob, extra: NodeJS.ProcessEnv = {}, args = ["3", "1"]) {
  const out = job.run("python3", [path.join(SIM, "workload.py"), ...args], {
    PYTHONPATH: SIM,
    TRITON_SIM_COMPILE_MS: "1",
    ...extra,
  });
  return JSON.parse(out.trim().split("\n").at(-1) as string) as { compiled: number; loaded: number };
}

function project() {
  const root = tempDir("action");
  fs.writeFileSync(
    path.join(root, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      "    path: ${RUNNER_TEMP}/triton-cache",
      "store:",
      `  path: ${path.join(root, "shared-store")}`,
      "key:",
      "  prefix: kernels",
      "profiles:",
      "  bench:",
      "    env:",
      `      PYTHONPATH: ${SIM}`,
      "      TRITON_SIM_COMPILE_MS: '1'",
      "    commands:",
      "      - name: workload",
      `        run: python3 ${SIM}/workload.py 3 1`,
      "",
    ].join("\n"),
  );
  return root;
}

const job = (
  root: string,
  name: string,
  event: Record<string, string> = PUSH,
  env: Record<string, string> = {},
) => {
  const j = new RunnerJob(root, name, { ...event, ...env }, ACTION);
  return j;
};

describe("the kcache action", () => {
  it("declares actions/cache's inputs and outputs, with restore/ and save/ sub-actions declaring theirs", () => {
    const main = actionYml("");
    expect(Object.keys(main.inputs).sort()).toEqual(Object.values(Inputs).sort());
    expect(Object.keys(main.outputs).sort()).toEqual(Object.values(Outputs).sort());
    for (const name of ["key", "restore-keys", "path", "lookup-only", "fail-on-cache-miss", "save-always"])
      expect(main.inputs).toHaveProperty(name);
    expect(main.runs).toMatchObject({ using: "node24", main: "dist/action.mjs", post: "dist/action.mjs" });
    expect(main.runs["post-if"]).toBe(`success() || env.${SAVE_ALWAYS_ENV} == 'true'`);

    const restore = actionYml("restore");
    for (const name of [
      "key",
      "path",
      "restore-keys",
      "lookup-only",
      "fail-on-cache-miss",
      "enableCrossOsArchive",
    ])
      expect(restore.inputs).toHaveProperty(name);
    expect(Object.keys(restore.outputs).sort()).toEqual([
      "cache-hit",
      "cache-matched-key",
      "cache-primary-key",
    ]);
    const save = actionYml("save");
    for (const name of ["key", "path", "upload-chunk-size", "enableCrossOsArchive"])
      expect(save.inputs).toHaveProperty(name);
    for (const [sub, yml] of [
      ["restore", restore],
      ["save", save],
    ] as const) {
      expect(yml.inputs.mode?.default).toBe(sub);
      expect(yml.runs).toEqual({ using: "node24", main: "../dist/action.mjs" });
      for (const name of Object.keys(yml.inputs)) expect(Object.values(Inputs)).toContain(name);
      for (const name of Object.keys(yml.outputs)) expect(Object.values(Outputs)).toContain(name);
    }
  });

  it("dist/action.mjs and its pack worker are built from the current source", () => {
    const fresh = path.join(tempDir("bundle"), "action.mjs");
    bundleAction(fresh);
    expect(fs.readFileSync(DIST_ACTION, "utf8") === fs.readFileSync(fresh, "utf8")).toBe(true);
    const worker = (dir: string) => fs.readFileSync(path.join(dir, "pack-worker.js"), "utf8");
    expect(worker(path.dirname(DIST_ACTION)) === worker(path.dirname(fresh))).toBe(true);
  });

  it("an actions/cache workflow with only `uses:` changed: restore, post-step save to GitHub's cache service, a hit at another path with 0 recompiles", async () => {
    const root = tempDir("dropin"); // no kcache.yml: the workflow's inputs are all there is
    const inputs = {
      path: "~/.triton/cache",
      key: "triton-Linux-3f2a",
      "restore-keys": "triton-Linux-",
      "upload-chunk-size": "33554432",
      enableCrossOsArchive: "false",
    };
    const a = job(root, "runner-a", PUSH, gha.env);
    const miss = await a.uses("", inputs);
    expect(miss.code).toBe(0);
    expect(miss.outputs).toMatchObject({ "cache-hit": "false", "cache-matched-key": "" });
    expect(miss.outputs["cache-primary-key"]).toMatch(/^triton-Linux-3f2a-[0-9a-f]{12}-a{40}$/);
    expect(miss.log).not.toMatch(/::warning/);
    expect(workload(a)).toMatchObject({ compiled: 7 });
    const [post] = await a.end();
    expect(post?.ran).toBe(true);
    expect(post?.result?.code).toBe(0);
    expect(post?.result?.log).toMatch(/saved .*triton-Linux-3f2a-/);
    expect(post?.result?.log).not.toMatch(/::warning/);

    // Another runner: another home folder, so Triton's cache is at another path.
    const b = job(root, "runner-b", PUSH, gha.env);
    const hit = await b.uses("", inputs);
    expect(hit.outputs).toMatchObject({
      "cache-hit": "true",
      "cache-matched-key": miss.outputs["cache-primary-key"],
    });
    const warm = workload(b);
    expect(warm.compiled).toBe(0);
    expect(warm.loaded).toBeGreaterThan(0);
    const [again] = await b.end();
    expect(again?.result?.log).toMatch(/restored exactly; keys are immutable, nothing saved/);
    // One pack, one manifest, and each job's run record (kcache stats counts drop-in jobs too).
    expect(gha.calls.filter((c) => c === "CreateCacheEntry").length).toBe(4);
  });

  it("the cache step before the install step (where actions/cache steps stand): the post step saves under the restore's key, says the stack changed, and the next run finds it", async () => {
    const root = tempDir("before-install");
    const inputs = { path: "~/.triton/cache", key: "order", store: path.join(root, "store") };
    const run = async (name: string) => {
      const j = job(root, name);
      const site = tempDir("no-torch-yet"); // the runner's Python before `pip install`
      j.env.PYTHONPATH = site;
      const restored = await j.uses("", inputs);
      // The job's install step, after the cache step: the packages land where the job's Python finds
      // them (PYTHONPATH stays as the restore step exported it, kcache's hook first).
      fs.cpSync(installedStack(), site, { recursive: true });
      workload(j);
      const [post] = await j.end();
      return { restored, post: post?.result };
    };
    const first = await run("first");
    const key = first.restored.outputs["cache-primary-key"] as string;
    expect(key).toMatch(/^order-[0-9a-f]{12}-a{40}$/);
    expect(first.post?.code).toBe(0);
    // Saved under the key the restore resolved, never with a second stack id and revision appended.
    expect(first.post?.log).toContain(`saved ${key}:`);
    expect(first.post?.log).not.toMatch(/a{40}-[0-9a-f]{12}-a{40}/);
    expect(first.post?.log).toMatch(
      /::warning.*names stack [0-9a-f]{12}, and this machine's stack is [0-9a-f]{12} now.*put the kcache step after the install/,
    );
    const second = await run("second");
    expect(second.restored.outputs).toMatchObject({ "cache-hit": "true", "cache-matched-key": key });
    // The post step found its restore's record under the same key (a doubled key found none).
    expect(second.post?.log).toMatch(/restored exactly; keys are immutable, nothing saved/);
  });

  it("restore/ and save/ as actions/cache/restore and save: the save takes the restore's cache-primary-key", async () => {
    const root = tempDir("subactions");
    const store = path.join(root, "store");
    const a = job(root, "a");
    const restored = await a.uses("restore", { path: "~/.triton/cache", key: "k", store });
    expect(restored.outputs["cache-hit"]).toBe("false");
    expect(workload(a)).toMatchObject({ compiled: 7 });
    const saved = await a.uses("save", {
      path: "~/.triton/cache",
      key: restored.outputs["cache-primary-key"] as string,
      store,
      "upload-chunk-size": "1048576",
    });
    expect(saved.outputs).toMatchObject({
      saved: "true",
      "cache-primary-key": restored.outputs["cache-primary-key"],
    });
    expect(saved.log).not.toMatch(/::warning/);
    expect(await a.end()).toEqual([]); // no post step in the sub-actions

    const b = job(root, "b", { ...PUSH, GITHUB_SHA: "b".repeat(40) });
    const later = await b.uses("restore", { path: "~/.triton/cache", key: "k", store });
    expect(later.outputs).toMatchObject({
      "cache-hit": "false",
      "cache-matched-key": restored.outputs["cache-primary-key"],
    });
    expect(workload(b)).toMatchObject({ compiled: 0 });
    // Nothing new: the key is still recorded (over a's packs), and `saved` says so.
    const recorded = await b.uses("save", {
      path: "~/.triton/cache",
      key: later.outputs["cache-primary-key"] as string,
      store,
    });
    expect(recorded.log).toMatch(/nothing new since .*: recorded/);
    expect(recorded.outputs.saved).toBe("true");
    const looked = await job(root, "c").uses("restore", {
      path: "~/.triton/cache",
      key: "k",
      store,
      "lookup-only": "true",
    });
    expect(looked.log).toContain(
      `found ${restored.outputs["cache-primary-key"]} (exact) in local store ${store} (lookup only, nothing downloaded)`,
    );
  });

  it("a dir path with a glob and an exclusion saves what they select, and a path with nothing says so in a warning", async () => {
    const root = tempDir("dirpath");
    const store = path.join(root, "store");
    const a = job(root, "a");
    const home = a.env.HOME as string;
    const inputs = {
      path: "~/.cache/tool/*\n!~/.cache/tool/**/*.lock\n~/.cache/nothing-here",
      key: "tools",
      store,
    };
    await a.uses("", inputs);
    // The job's own steps fill the folder (a package manager, say).
    const tool = path.join(home, ".cache", "tool");
    fs.mkdirSync(path.join(tool, "wheels"), { recursive: true });
    fs.writeFileSync(path.join(tool, "wheels", "pkg-1.whl"), Buffer.alloc(70_000, 7));
    fs.writeFileSync(path.join(tool, "wheels", "index.lock"), "lock");
    fs.writeFileSync(path.join(tool, "http-v2.json"), '{"ok":1}');
    const [post] = await a.end();
    expect(post?.result?.log).toMatch(/saved/);
    expect(post?.result?.log).toMatch(
      new RegExp(
        `::warning title=kcache::path ${path.join(home, ".cache", "nothing-here")} \\(cache path-2\\): nothing to save: the folder does not exist`,
      ),
    );

    const b = job(root, "b");
    const hit = await b.uses("", inputs);
    expect(hit.outputs["cache-hit"]).toBe("true");
    const restored = path.join(b.env.HOME as string, ".cache", "tool");
    expect(fs.readFileSync(path.join(restored, "wheels", "pkg-1.whl")).equals(Buffer.alloc(70_000, 7))).toBe(
      true,
    );
    expect(fs.readFileSync(path.join(restored, "http-v2.json"), "utf8")).toBe('{"ok":1}');
    expect(fs.existsSync(path.join(restored, "wheels", "index.lock"))).toBe(false);
  });

  it("a failed job skips the post-step save; with save-always it saves", async () => {
    const root = tempDir("failed");
    const store = path.join(root, "store");
    const inputs = { path: "~/.triton/cache", key: "k", store };
    const a = job(root, "a");
    await a.uses("", inputs);
    workload(a);
    a.run("false", []);
    expect(await a.end()).toEqual([{ sub: "", ran: false, result: null }]);
    expect(fs.existsSync(path.join(store, "manifests"))).toBe(false);

    const b = job(root, "b");
    await b.uses("", { ...inputs, "save-always": "true" });
    workload(b);
    b.run("false", []);
    const [post] = await b.end();
    expect(post?.ran).toBe(true);
    expect(post?.result?.log).toMatch(/saved/);
    expect(fs.readdirSync(path.join(store, "manifests"))).toEqual(["branch%2Fmain"]);
  });

  it("mode run honours key and path, and writes kcache-report.json as the CLI does", async () => {
    const root = project();
    const a = job(root, "a");
    const cache = path.join(a.env.RUNNER_TEMP as string, "other-cache");
    const r = await a.uses("", {
      profile: "bench",
      config: "kcache.yml",
      key: "mine",
      path: cache,
      kind: "triton",
    });
    expect(r.code).toBe(0);
    expect(r.outputs["cache-primary-key"]).toMatch(/^mine-[0-9a-f]{12}-a{40}$/);
    expect(r.outputs).toMatchObject({ "kernels-compiled": "7", saved: "true" });
    const report = JSON.parse(fs.readFileSync(r.outputs.report as string, "utf8"));
    expect(report).toMatchObject({ profile: "bench", key: r.outputs["cache-primary-key"], passed: true });
    expect(report.restore.caches).toEqual([expect.objectContaining({ path: cache })]);
    expect(fs.readdirSync(cache).length).toBeGreaterThan(5);
    expect(fs.existsSync(path.join(a.env.RUNNER_TEMP as string, "triton-cache"))).toBe(false);
    const [post] = await a.end(); // a run saved already: the post step has nothing to do
    expect(post?.result?.log).not.toMatch(/saved|nothing to save/);
  });

  it("restores in one step, exports TRITON_CACHE_DIR for the next steps, and saves after them", async () => {
    const root = project();
    const a = job(root, "runner-a");
    const miss = await a.uses("", { mode: "restore", config: "kcache.yml" });
    expect(miss.code).toBe(0);
    expect(miss.outputs["cache-primary-key"]).toMatch(/^kernels-[0-9a-f]{12}-a{40}$/);
    const cacheDir = a.stepEnv().TRITON_CACHE_DIR as string;
    expect(cacheDir).toBe(path.join(a.dir, "temp", "triton-cache"));
    workload(a);
    expect((await a.uses("", { mode: "save", config: "kcache.yml" })).outputs).toMatchObject({
      saved: "true",
    });
    const b = job(root, "runner-b");
    expect((await b.uses("", { mode: "restore", config: "kcache.yml" })).outputs["cache-hit"]).toBe("true");
    expect(fs.readdirSync(path.join(b.dir, "temp", "triton-cache")).length).toBeGreaterThan(5);
  });

  it("the bundled action reads packs on worker threads (dist/pack-worker.js)", async () => {
    const root = project();
    const yml = path.join(root, "kcache.yml");
    fs.writeFileSync(yml, `${fs.readFileSync(yml, "utf8")}save:\n  pack-mib: 1\n`);
    const a = job(root, "runner-a");
    a.env.KCACHE_THREADS = "2";
    await a.uses("", { mode: "restore", config: "kcache.yml" });
    generateTritonCache(path.join(a.dir, "temp", "triton-cache"), {
      entries: 24,
      totalBytes: 4_000_000,
      seed: 8,
    });
    const saved = await a.uses("", { mode: "save", config: "kcache.yml" });
    expect(saved.outputs).toMatchObject({ saved: "true" });
    const b = job(root, "runner-b");
    b.env.KCACHE_THREADS = "2";
    const hit = await b.uses("", { mode: "restore", config: "kcache.yml" });
    expect(hit.outputs["cache-hit"]).toBe("true");
    expect(hit.log).toMatch(/restored 24 entries from \S+ \(exact\) of local store \S+ on 2 threads/);
    expect(
      fs.readdirSync(path.join(b.dir, "temp", "triton-cache")).filter((n) => !n.startsWith(".")),
    ).toHaveLength(24);
  });

  it("falls back through restore-keys, and fails on a miss when asked", async () => {
    const root = project();
    const a = job(root, "a");
    await a.uses("restore", { config: "kcache.yml", key: "my-key-1" });
    workload(a, {}, ["2", "0"]);
    const saved = await a.uses("save", { config: "kcache.yml", key: "my-key-1" });
    expect(saved.outputs["cache-primary-key"]).toMatch(/^my-key-1-[0-9a-f]{12}-a{40}$/);
    const b = job(root, "b");
    const prefix = await b.uses("restore", {
      config: "kcache.yml",
      key: "my-key-2",
      "restore-keys": "other-\nmy-key-",
    });
    expect(prefix.outputs).toMatchObject({
      "cache-hit": "false",
      "cache-matched-key": saved.outputs["cache-primary-key"],
    });
    const failed = await job(root, "c").uses("restore", {
      config: "kcache.yml",
      key: "absent",
      "fail-on-cache-miss": "true",
    });
    expect(failed.code).toBe(1);
    expect(failed.log).toMatch(/::error::no cache matched absent-[0-9a-f]{12}-a{40} \(fail-on-cache-miss\)/);
  });

  it("names inputs that do not apply to the mode in a warning, and refuses a mode it does not know", async () => {
    const root = project();
    const r = await job(root, "a").uses("", {
      profile: "bench",
      config: "kcache.yml",
      "lookup-only": "true",
    });
    expect(r.log).toMatch(
      /::warning title=kcache::input lookup-only applies to mode restore; it is ignored in mode run/,
    );
    const bad = await job(root, "b").uses("", { mode: "sync" });
    expect(bad.code).toBe(1);
    expect(bad.log).toMatch(/::error::input mode "sync": use run, restore, save, prewarm, or leave it out/);
  });

  it("runs a profile, reporting kernels, the step summary, and a pull request saving only into its own scope", async () => {
    const root = project();
    const pr = job(root, "pr", {
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_REF: "refs/pull/7/merge",
      GITHUB_BASE_REF: "main",
      GITHUB_HEAD_REF: "feature",
      GITHUB_SHA: "b".repeat(40),
    });
    const r = await pr.uses("", { profile: "bench", config: "kcache.yml" });
    expect(r.code).toBe(0);
    expect(r.outputs).toMatchObject({ "kernels-compiled": "7", saved: "true", "cache-hit": "false" });
    expect(fs.readFileSync(pr.summary, "utf8")).toContain("### kcache run `bench`: passed");
    expect(fs.readdirSync(path.join(root, "shared-store", "manifests"))).toEqual(["pr%2F7"]);
    const m = await job(root, "main").uses("", { mode: "restore", config: "kcache.yml" });
    expect(m.outputs["cache-matched-key"]).toBe("");
  });

  it("prewarms when the default branch's cache is missing, and not when it is present", async () => {
    const root = project();
    const sched = {
      GITHUB_EVENT_NAME: "schedule",
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: "c".repeat(40),
    };
    const first = await job(root, "p1", sched).uses("", {
      mode: "prewarm",
      profile: "bench",
      config: "kcache.yml",
    });
    expect(first.outputs).toMatchObject({ prewarm: "ran", saved: "true" });
    const second = await job(root, "p2", sched).uses("", {
      mode: "prewarm",
      profile: "bench",
      config: "kcache.yml",
    });
    expect(second.outputs).toMatchObject({ prewarm: "present" });
  });
});
