import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { actionForTests, actionYml, RunnerJob } from "../helpers/action-runner.js";
import { EDITS, kernels, prewarmProject } from "../helpers/cpu-prewarm-project.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * The action's mode prewarm with `cpu: true` (the step `kcache workflow` writes in a profile's CPU
 * prewarm job), run as the runner runs it: on a pull request that changed a kernel it compiles that
 * kernel into the pull request's scope and the pull request's GPU job then compiles nothing; on the
 * default branch it compiles nothing (a trusted scope is the GPU job's to fill), on a pull request
 * with no GPU job's key holding a compile plan it says so and passes, and its inputs are checked and
 * named where they do not apply.
 */
const ACTION = actionForTests("cpu-prewarm");
const SIM = path.resolve(import.meta.dirname, "../../demo/sim");
const PUSH = { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main", GITHUB_SHA: "a".repeat(40) };
const PULL_REQUEST = {
  GITHUB_EVENT_NAME: "pull_request",
  GITHUB_REF: "refs/pull/7/merge",
  GITHUB_BASE_REF: "main",
  GITHUB_HEAD_REF: "feature",
  GITHUB_SHA: "b".repeat(40),
};

function project(): string {
  const root = tempDir("action-cpu");
  fs.writeFileSync(
    path.join(root, "kcache.yml"),
    [
      "caches: [{ name: triton, kind: triton, path: '${RUNNER_TEMP}/triton-cache' }]",
      `store: { path: ${path.join(root, "store")} }`,
      "key: { prefix: kernels }",
      "profiles:",
      "  bench:",
      `    env: { PYTHONPATH: ${SIM}, TRITON_SIM_COMPILE_MS: '1' }`,
      `    commands: [{ name: workload, run: python3 ${SIM}/workload.py 3 1 }]`,
      "",
    ].join("\n"),
  );
  return root;
}

const CPU = { mode: "prewarm", profile: "bench", config: "kcache.yml", cpu: "true", workers: "2" };

describe("the kcache action, mode prewarm with cpu: true", () => {
  it("declares cpu and workers", () => {
    const inputs = actionYml("").inputs;
    expect(inputs.cpu?.default).toBe("false");
    expect(inputs).toHaveProperty("workers");
  });

  it("on a pull request that changed a kernel: compiles it into the pull request's scope, and the GPU job compiles nothing", async () => {
    const p = prewarmProject();
    const base = await p.mainJob();
    p.pullRequest("feature", { file: "lib/ops.py", change: EDITS.bwd });
    // The CPU runner: the pull request's checkout, the job's stack installed (the simulated Triton).
    const env = p.prEnv(7, "cpu");
    const job = new RunnerJob(p.root, "cpu-runner", env as Record<string, string>, ACTION, p.dir);
    const r = await job.uses("", { mode: "prewarm", profile: "smoke", cpu: "true", workers: "2" });
    expect(r.code, r.log).toBe(0);
    expect(r.outputs).toMatchObject({ prewarm: "ran", saved: "true", "cache-matched-key": base.report.key });
    const key = r.outputs["cache-primary-key"] as string;
    expect(p.manifests("pr/7")).toEqual([key]);
    const gpu = await p.gpuJob(p.prEnv(7, "gpu"));
    expect(gpu.report.restore?.matchedKey).toBe(key);
    expect(kernels(gpu.report)?.compiled).toBe(0);
    // The same change in a pull request no CPU prewarm ran for: its GPU job compiles the changed kernel.
    const cold = await p.gpuJob(p.prEnv(8, "gpu"));
    expect(kernels(cold.report)?.compiled).toBeGreaterThan(0);
  });

  it("on the default branch compiles nothing: the GPU job fills its cache", async () => {
    const root = project();
    const r = await new RunnerJob(root, "main", PUSH, ACTION).uses("", CPU);
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.prewarm).toBe("refused");
    expect(r.log).toMatch(/a CPU prewarm saves only into a pull request's own scope/);
  });

  it("on a pull request with no GPU job's key holding a compile plan, says so and passes (the GPU job compiles)", async () => {
    const root = project();
    const r = await new RunnerJob(root, "pr", PULL_REQUEST, ACTION).uses("", CPU);
    expect(r.code, r.log).toBe(0);
    expect(r.outputs).toMatchObject({ prewarm: "no-plan", saved: "false" });
    expect(r.log).toMatch(/holds a compile plan/);
    expect(fs.readFileSync(path.join(root, "pr", "summary.md"), "utf8")).toMatch(
      /### kcache prewarm --cpu bench\n\n.*holds a compile plan/,
    );
  });

  it("fails on a workers input that is no count, and names cpu where it does not apply", async () => {
    const root = project();
    const bad = await new RunnerJob(root, "pr", PULL_REQUEST, ACTION).uses("", { ...CPU, workers: "many" });
    expect(bad.code).toBe(1);
    expect(bad.log).toMatch(/::error::input workers: "many" is not a whole number from 1 to 256/);
    const restore = await new RunnerJob(root, "restore", PULL_REQUEST, ACTION).uses("", {
      mode: "restore",
      profile: "bench",
      config: "kcache.yml",
      cpu: "true",
    });
    expect(restore.log).toMatch(
      /::warning.*::input cpu applies to mode prewarm; it is ignored in mode restore/,
    );
  });
});
