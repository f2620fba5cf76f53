import { describe, expect, it } from "vitest";
import { kernels, prewarmProject, qualnames } from "../../helpers/cpu-prewarm-project.js";

/*
 * The compile plan a GPU job leaves beside its key (issue 51): what `kcache prewarm --cpu` later reads
 * to compile a pull request's changed kernels. Real `kcache run`s of a project whose kernels run
 * through the simulated Triton's JIT with kcache's hook in.
 */
describe("the compile plan a job on the default branch saves", () => {
  it("holds every kernel the job compiled, relative to the checkout, with its function's key, cache key and target", async () => {
    const p = prewarmProject();
    const { report, stderr } = await p.mainJob();
    // fwd_kernel at two specializations; bwd_kernel at two, each over its two autotune configs.
    expect(kernels(report)).toMatchObject({ compiled: 6, loaded: 0 });
    expect(report.scope).toBe("branch/main");
    expect(p.manifests("branch/main")).toEqual([report.key]);

    // Stored as plans/branch%2Fmain/<key>.json, and it reads back as the prewarm reads it (decodePlan).
    const plans = p.plans("branch/main");
    expect([...plans.keys()]).toEqual([report.key]);
    const plan = plans.get(report.key);
    expect(plan).toMatchObject({ format: "kcache-plan/1", key: report.key, scope: "branch/main" });
    expect(plan?.revision).toBe(report.revision);
    const entries = plan?.entries ?? [];
    expect(entries).toHaveLength(6);
    expect(qualnames(entries)).toEqual([...Array(4).fill("bwd_kernel"), ...Array(2).fill("fwd_kernel")]);
    for (const e of entries) {
      expect(e.module).toBe("lib.ops");
      expect(e.file).toBe("lib/ops.py"); // relative: another clone finds it in its own checkout
      expect(e.fnKey).toMatch(/^[0-9a-f]{64}$/);
      expect(e.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(e.target).toEqual(["cuda", 90, 32]);
    }
    // One cache key per kernel; one function key per JIT function.
    expect(new Set(entries.map((e) => e.hash)).size).toBe(6);
    const fnKeys = (name: string) => new Set(entries.filter((e) => e.qualname === name).map((e) => e.fnKey));
    expect(fnKeys("fwd_kernel").size).toBe(1);
    expect(fnKeys("bwd_kernel").size).toBe(1);
    // The autotune configs: each of bwd_kernel's specializations at BLOCK 64 (4 warps) and 128 (8 warps).
    const bwd = entries.filter((e) => e.qualname === "bwd_kernel");
    expect(bwd.map((e) => [e.constexprs, e.options.num_warps]).sort()).toEqual(
      [
        [[[[2], 64]], 4],
        [[[[2], 64]], 4],
        [[[[2], 128]], 8],
        [[[[2], 128]], 8],
      ].sort(),
    );
    // The device facts the library read at import (the simulated driver's), for the prewarm to show.
    expect(plan?.device).toMatchObject({ target: ["cuda", 90, 32], triton: { max_shared_mem: 232448 } });
    expect(stderr).toMatch(/compile plan: 6 kernels \(6 recorded by this job\)/);
  });

  it("a warm job on a later revision loads only the autotune winners, and its key's plan still holds all 6 (the parent's merged in)", async () => {
    const p = prewarmProject();
    const first = await p.mainJob();
    const firstPlan = p.plans("branch/main").get(first.report.key);
    p.commit("README.md", "The project, documented.\n");
    const second = await p.mainJob();
    expect(second.report.key).not.toBe(first.report.key);
    expect(second.report.restore?.matchedKey).toBe(first.report.key);
    // Nothing compiled: fwd_kernel's two and bwd_kernel's two winners loaded; the losing configs never ran.
    expect(kernels(second.report)).toMatchObject({ compiled: 0, loaded: 4 });

    const plan = p.plans("branch/main").get(second.report.key);
    expect(plan?.entries).toHaveLength(6);
    expect(new Set(plan?.entries.map((e) => e.hash))).toEqual(new Set(firstPlan?.entries.map((e) => e.hash)));
    // This job's own four first, then the two configs only the parent ran.
    expect(plan?.entries.slice(4).every((e) => e.qualname === "bwd_kernel")).toBe(true);
    expect(second.stderr).toMatch(
      new RegExp(`compile plan: 6 kernels \\(4 recorded by this job, the rest from ${first.report.key}\\)`),
    );
  });
});
