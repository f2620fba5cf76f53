import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { Inputs } from "../../src/github/action.js";
import { Outputs } from "../../src/github/outputs.js";
import { tempDir } from "../helpers/sandbox.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DIST_ACTION = path.join(ROOT, "dist", "action.mjs");
/**
 * The behaviour tests run the action bundled from src/ now, not the committed dist/: a change in src/
 * is caught by a behaviour test, and the staleness test below says when dist/ must be rebuilt.
 */
// Beside dist/action.mjs, so it finds python/ and package.json as the shipped action does (ignored by git).
const ACTION = path.join(ROOT, "dist", `.test-action-${process.pid}.mjs`);
beforeAll(() => {
  execFileSync(process.execPath, [path.join(ROOT, "scripts", "bundle-action.mjs"), ACTION], { cwd: ROOT });
});
afterAll(() => {
  fs.rmSync(ACTION, { force: true });
});
const SIM = path.join(ROOT, "demo", "sim");
const actionYml = parse(fs.readFileSync(path.join(ROOT, "action.yml"), "utf8")) as {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, unknown>;
  runs: { using: string; main: string };
};

/** A job on a runner: its folders and the variables a GitHub runner sets for every step. */
function runner(root: string, name: string, event: Record<string, string>) {
  const dir = path.join(root, name);
  for (const d of ["temp", "work"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
  const files = {
    output: path.join(dir, "output"),
    env: path.join(dir, "env"),
    summary: path.join(dir, "summary.md"),
  };
  for (const f of Object.values(files)) fs.writeFileSync(f, "");
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    GITHUB_ACTIONS: "true",
    GITHUB_WORKSPACE: root,
    RUNNER_TEMP: path.join(dir, "temp"),
    GITHUB_OUTPUT: files.output,
    GITHUB_ENV: files.env,
    GITHUB_STEP_SUMMARY: files.summary,
    GITHUB_REPOSITORY: "org/kernels",
    ...event,
  };
  /** Runs the action as the runner does: `node dist/action.mjs`, with INPUT_* set (defaults from action.yml). */
  const step = (
    inputs: Record<string, string>,
  ): Promise<{ code: number | null; stdout: string; outputs: Record<string, string> }> => {
    fs.writeFileSync(files.output, "");
    const stepEnv: NodeJS.ProcessEnv = { ...env, ...exported() };
    for (const [name, spec] of Object.entries(actionYml.inputs))
      stepEnv[`INPUT_${name.toUpperCase()}`] = inputs[name] ?? spec.default ?? "";
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [ACTION], { env: stepEnv, cwd: root });
      let stdout = "";
      child.stdout.on("data", (d) => {
        stdout += d;
      });
      child.stderr.on("data", (d) => {
        stdout += d;
      });
      child.on("close", (code) => resolve({ code, stdout, outputs: commandFile(files.output) }));
    });
  };
  /** Variables earlier steps exported through $GITHUB_ENV. */
  const exported = () => commandFile(files.env);
  return { dir, env, files, step, exported };
}

/** Reads a $GITHUB_OUTPUT / $GITHUB_ENV file as @actions/core writes it (name<<delimiter ... delimiter). */
function commandFile(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = fs.readFileSync(file, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const m = /^([^=<]+)<<(.+)$/.exec(lines[i] as string);
    if (m) {
      const value: string[] = [];
      while (++i < lines.length && lines[i] !== m[2]) value.push(lines[i] as string);
      out[m[1] as string] = value.join("\n");
    } else if (lines[i]?.includes("=")) {
      const [k, ...v] = (lines[i] as string).split("=");
      out[k as string] = v.join("=");
    }
  }
  return out;
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

const PUSH = { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main", GITHUB_SHA: "a".repeat(40) };

describe("the kcache action", () => {
  it("declares actions/cache's inputs and outputs under the same names, and runs on node24 from dist/", () => {
    for (const name of ["key", "restore-keys", "path", "lookup-only", "fail-on-cache-miss"])
      expect(actionYml.inputs).toHaveProperty(name);
    for (const name of ["cache-hit", "cache-primary-key", "cache-matched-key"])
      expect(actionYml.outputs).toHaveProperty(name);
    expect(Object.keys(actionYml.inputs).sort()).toEqual(Object.values(Inputs).sort());
    for (const o of Object.values(Outputs)) expect(actionYml.outputs).toHaveProperty(o);
    expect(actionYml.runs).toEqual({ using: "node24", main: "dist/action.mjs" });
  });

  it("dist/action.mjs is built from the current source", () => {
    const fresh = path.join(tempDir("bundle"), "action.mjs");
    execFileSync(process.execPath, [path.join(ROOT, "scripts", "bundle-action.mjs"), fresh], { cwd: ROOT });
    expect(fs.readFileSync(DIST_ACTION, "utf8") === fs.readFileSync(fresh, "utf8")).toBe(true);
  });

  it("restores in one step, exports TRITON_CACHE_DIR for the next steps, and saves after them", async () => {
    const root = project();
    const a = runner(root, "runner-a", PUSH);
    const miss = await a.step({ mode: "restore", config: "kcache.yml" });
    expect(miss.code).toBe(0);
    expect(miss.outputs).toMatchObject({ "cache-hit": "false", "cache-matched-key": "" });
    expect(miss.outputs["cache-primary-key"]).toMatch(/^kernels-[0-9a-f]{12}-a{40}$/);
    const cacheDir = a.exported().TRITON_CACHE_DIR as string;
    expect(cacheDir).toBe(path.join(a.dir, "temp", "triton-cache"));
    // The job's own step, using the exported variable.
    execFileSync("python3", [path.join(SIM, "workload.py"), "3", "1"], {
      env: { ...a.env, ...a.exported(), PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "1" },
    });
    const saved = await a.step({ mode: "save", config: "kcache.yml" });
    expect(saved.outputs).toMatchObject({ saved: "true" });

    // Another runner, another RUNNER_TEMP: an exact hit at its own path.
    const b = runner(root, "runner-b", PUSH);
    const hit = await b.step({ mode: "restore", config: "kcache.yml" });
    expect(hit.outputs).toMatchObject({
      "cache-hit": "true",
      "cache-matched-key": miss.outputs["cache-primary-key"],
    });
    expect(fs.readdirSync(path.join(b.dir, "temp", "triton-cache")).length).toBeGreaterThan(5);
  });

  it("takes an explicit key and restore-keys as actions/cache does, and fails on a miss when asked", async () => {
    const root = project();
    const a = runner(root, "a", PUSH);
    await a.step({ mode: "restore", config: "kcache.yml", key: "my-key-1" });
    execFileSync("python3", [path.join(SIM, "workload.py"), "2", "0"], {
      env: { ...a.env, ...a.exported(), PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "1" },
    });
    expect((await a.step({ mode: "save", config: "kcache.yml", key: "my-key-1" })).outputs).toMatchObject({
      saved: "true",
      "cache-primary-key": "my-key-1",
    });
    const b = runner(root, "b", PUSH);
    const prefix = await b.step({
      mode: "restore",
      config: "kcache.yml",
      key: "my-key-2",
      "restore-keys": "other-\nmy-key-",
    });
    expect(prefix.outputs).toMatchObject({ "cache-hit": "false", "cache-matched-key": "my-key-1" });
    const c = runner(root, "c", PUSH);
    const failed = await c.step({
      mode: "restore",
      config: "kcache.yml",
      key: "absent",
      "fail-on-cache-miss": "true",
    });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/::error::no cache matched absent \(fail-on-cache-miss\)/);
  });

  it("runs a profile, reporting kernels, the step summary, and a pull request saving only into its own scope", async () => {
    const root = project();
    const pr = runner(root, "pr", {
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_REF: "refs/pull/7/merge",
      GITHUB_BASE_REF: "main",
      GITHUB_HEAD_REF: "feature",
      GITHUB_SHA: "b".repeat(40),
    });
    const r = await pr.step({ mode: "run", profile: "bench", config: "kcache.yml" });
    expect(r.code).toBe(0);
    expect(r.outputs).toMatchObject({ "kernels-compiled": "7", saved: "true", "cache-hit": "false" });
    expect(fs.readFileSync(pr.files.summary, "utf8")).toContain("### kcache run `bench`: passed");
    expect(fs.readdirSync(path.join(root, "shared-store", "manifests"))).toEqual(["pr%2F7"]);

    // main does not restore what the PR saved.
    const main = runner(root, "main", PUSH);
    const m = await main.step({ mode: "restore", config: "kcache.yml" });
    expect(m.outputs["cache-matched-key"]).toBe("");
  });

  it("prewarms when the default branch's cache is missing, and not when it is present", async () => {
    const root = project();
    const sched = {
      GITHUB_EVENT_NAME: "schedule",
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: "c".repeat(40),
    };
    const first = await runner(root, "p1", sched).step({
      mode: "prewarm",
      profile: "bench",
      config: "kcache.yml",
    });
    expect(first.outputs).toMatchObject({ prewarm: "ran", saved: "true" });
    const second = await runner(root, "p2", sched).step({
      mode: "prewarm",
      profile: "bench",
      config: "kcache.yml",
    });
    expect(second.outputs).toMatchObject({ prewarm: "present" });
  });
});
