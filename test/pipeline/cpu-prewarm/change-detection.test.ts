import { describe, expect, it } from "vitest";
import { EDITS, kernels, prewarmProject, qualnames } from "../../helpers/cpu-prewarm-project.js";

/*
 * What `kcache prewarm --cpu` compiles of a pull request, and what its GPU job then gets from it
 * (issue 51): a kernel whose own source changed, a kernel whose callee changed, and a change to no
 * kernel at all. Each on a base plan of 6 entries (fwd_kernel's 2 specializations, bwd_kernel's 2
 * specializations × 2 autotune configs) saved by a job on main.
 */

/** A project whose main saved a plan, and pull request 7 making `edit`: its prewarm and GPU job. */
async function pullRequest(edit: { file: string; change: (s: string) => string }) {
  const p = prewarmProject();
  const base = await p.mainJob();
  const baseHashes = new Set(
    p
      .plans("branch/main")
      .get(base.report.key)
      ?.entries.map((e) => e.hash),
  );
  const sha = p.pullRequest("pr", edit);
  const prewarm = await p.prewarm(p.prEnv(7, "cpu"));
  expect(prewarm.code, prewarm.stderr).toBe(0);
  const report = prewarm.report;
  if (!report) throw new Error(`no JSON report: ${prewarm.stdout}`);
  expect(report).toMatchObject({ outcome: "ran", base: base.report.key, plan: 6, touchedCuda: false });
  expect(report.saved).toBe(report.key);
  // The pull request key's plan: what the prewarm compiled ahead, and the new kernels it recorded.
  const prPlan = p.plans("pr/7").get(report.key as string);
  const added = prPlan?.entries.filter((e) => !baseHashes.has(e.hash)) ?? [];
  const gpu = await p.gpuJob(p.prEnv(7, "gpu"));
  return { p, base, sha, report, prPlan, added, gpu };
}

describe("kcache prewarm --cpu compiles what a pull request changed, and only that", () => {
  it("a change to bwd_kernel's own source: its 4 entries compiled (2 specializations × 2 configs), fwd_kernel's 2 unchanged", async () => {
    const { base, sha, report, prPlan, added, gpu } = await pullRequest({
      file: "lib/ops.py",
      change: EDITS.bwd,
    });
    expect(report.counts).toEqual({ unchanged: 2, compiled: 4, cached: 0, missing: 0, failed: 0 });
    // This machine computes the very keys the GPU job had for the unchanged ones.
    expect(report.sameKey).toEqual({ same: 2, other: 0 });
    expect(report.left).toEqual([]);
    expect(qualnames(added)).toEqual(Array(4).fill("bwd_kernel"));
    expect(prPlan?.prewarmed).toMatchObject({
      base: base.report.key,
      revision: sha,
      unchanged: 2,
      failed: [],
    });
    expect(new Set(prPlan?.prewarmed?.compiled)).toEqual(new Set(added.map((e) => e.hash)));

    // The GPU job compiles nothing: the 4 new bwd kernels load from what the CPU compiled ahead.
    expect(gpu.report.restore?.matchedKey).toBe(report.key);
    expect(kernels(gpu.report)).toMatchObject({ compiled: 0, loaded: 6 });
    expect(gpu.report.cpuPrewarm).toMatchObject({
      base: base.report.key,
      revision: sha,
      compiledAhead: 4,
      loadedAhead: 4,
      stillCompiled: 0,
    });
    expect(gpu.stderr).toContain(
      `CPU prewarm (on ${base.report.key}): 4 kernels compiled ahead, 4 of them loaded by this job; 0 compiled here`,
    );
  });

  it("a change to helper, which fwd_kernel calls: fwd_kernel's 2 entries compiled, bwd_kernel's 4 unchanged", async () => {
    const { base, report, added, gpu } = await pullRequest({ file: "lib/ops.py", change: EDITS.helper });
    expect(report.counts).toEqual({ unchanged: 4, compiled: 2, cached: 0, missing: 0, failed: 0 });
    expect(report.sameKey).toEqual({ same: 4, other: 0 });
    expect(qualnames(added)).toEqual(["fwd_kernel", "fwd_kernel"]);
    expect(kernels(gpu.report)).toMatchObject({ compiled: 0 });
    expect(gpu.report.cpuPrewarm).toMatchObject({ compiledAhead: 2, loadedAhead: 2, stillCompiled: 0 });
    expect(gpu.stderr).toContain(
      `CPU prewarm (on ${base.report.key}): 2 kernels compiled ahead, 2 of them loaded by this job; 0 compiled here`,
    );
  });

  it("a change to no kernel (README): nothing compiled, all 6 unchanged with the GPU job's very keys", async () => {
    const { base, report, added, gpu } = await pullRequest({
      file: "README.md",
      change: (s) => `${s}More words.\n`,
    });
    expect(report.counts).toEqual({ unchanged: 6, compiled: 0, cached: 0, missing: 0, failed: 0 });
    expect(report.sameKey).toEqual({ same: 6, other: 0 });
    expect(added).toEqual([]);
    expect(kernels(gpu.report)).toMatchObject({ compiled: 0, loaded: 4 });
    expect(gpu.report.cpuPrewarm).toMatchObject({ compiledAhead: 0, loadedAhead: 0, stillCompiled: 0 });
    expect(gpu.stderr).toContain(
      `CPU prewarm (on ${base.report.key}): 0 kernels compiled ahead, 0 of them loaded by this job; 0 compiled here`,
    );
  });
});

describe("the GPU job of a pull request that changed a kernel", () => {
  it("compiles the changed kernels itself without the prewarm (the control), and none after it", async () => {
    const p = prewarmProject();
    const base = await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });

    // The control: the same pull request's GPU job with no CPU prewarm before it.
    const without = await p.gpuJob(p.prEnv(7, "gpu-alone"));
    expect(without.report.restore?.matchedKey).toBe(base.report.key);
    expect(kernels(without.report)?.compiled).toBe(4); // bwd_kernel's specializations × configs, tuned again
    expect(without.report.cpuPrewarm ?? null).toBeNull();
    expect(without.stderr).not.toContain("CPU prewarm");

    const prewarm = await p.prewarm(p.prEnv(7, "cpu"));
    expect(prewarm.report?.counts.compiled).toBe(4);
    const after = await p.gpuJob(p.prEnv(7, "gpu"));
    expect(kernels(after.report)?.compiled).toBe(0);
    const ahead = after.report.cpuPrewarm;
    expect(ahead?.compiledAhead).toBe(4);
    expect(ahead?.loadedAhead).toBe(ahead?.compiledAhead);
    expect(ahead?.why).toEqual({ leftByPrewarm: 0, notInPlan: 0 });
    // The hook's plan lines feed the save, not the report: it does not grow by a line per kernel.
    for (const c of after.report.commands) expect(Object.keys(c.kernels)).not.toContain("plan");
  });
});
