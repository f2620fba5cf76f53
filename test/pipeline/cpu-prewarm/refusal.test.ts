import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  EDITS,
  kernels,
  mainPlanEntries,
  OPS_PY,
  prewarmProject,
} from "../../helpers/cpu-prewarm-project.js";

/*
 * A compile plan is data a job wrote to the store (issue 51): `kcache prewarm --cpu` imports only the
 * checkout's own modules. A plan naming a file outside the checkout is refused whole, before anything
 * is restored or compiled; an entry whose module resolves to another file than the one recorded is
 * left to the GPU job, never compiled.
 */
describe("kcache prewarm --cpu refuses a plan naming a file outside the checkout", () => {
  it.each([
    ["a relative path out of it", "../outside.py"],
    ["an absolute path", "/usr/lib/python3/outside.py"],
  ])(
    "%s: warns naming the plan and the entry, compiles and saves nothing; --strict exits 3",
    async (_, file) => {
      const p = prewarmProject();
      const base = await p.mainJob();
      p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
      const i = mainPlanEntries(p).findIndex((e) => e.qualname === "bwd_kernel");
      p.tamper("branch/main", (plan) => {
        const e = plan.entries[i];
        if (e) e.file = file;
      });
      const env = p.prEnv(7, "cpu");
      const r = await p.prewarm(env);
      // A store's damage warns and the job goes on (docs/cli.md's exit codes), unless --strict.
      expect(r.code, r.stderr).toBe(0);
      expect(r.report?.outcome).toBe("plan-refused");
      expect(r.stderr).toContain(
        `plan plans/branch%2Fmain/${base.report.key}.json: entry ${i} (lib.ops.bwd_kernel) names ${JSON.stringify(file)}`,
      );
      expect(r.stderr).toMatch(/the plan is refused .*Nothing was compiled/);
      // Nothing restored, compiled or saved: no cache entry, no key or plan in the pull request's scope.
      const cache = env.TRITON_CACHE_DIR as string;
      expect(fs.existsSync(cache) ? fs.readdirSync(cache) : []).toEqual([]);
      expect(p.manifests("pr/7")).toEqual([]);
      expect(p.plans("pr/7").size).toBe(0);
      expect(p.manifests("branch/main")).toEqual([base.report.key]);
      const strict = await p.prewarm(env, ["--strict"]);
      expect(strict.code, strict.stderr).toBe(3);
      expect(strict.stderr).toMatch(/kcache: error: plan .* the plan is refused .*Nothing was compiled/);
      expect(p.manifests("pr/7")).toEqual([]);
    },
  );
});

describe("kcache prewarm --cpu leaves to the GPU job an entry whose module is not the recorded file", () => {
  it("a module name that resolves elsewhere (the standard library's json), or to another file of the checkout: missing, counted once with 2 workers", async () => {
    const p = prewarmProject();
    await p.mainJob();
    // fwd_kernel changes (its callee): both its entries would be compiled.
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.helper });
    const fwd = mainPlanEntries(p).flatMap((e, i) => (e.qualname === "fwd_kernel" ? [i] : []));
    expect(fwd).toHaveLength(2);
    p.tamper("branch/main", (plan) => {
      const [a, b] = fwd.map((i) => plan.entries[i]);
      if (a) a.module = "json"; // shadowed: the name resolves to the standard library's module
      if (b) b.file = "lib/__init__.py"; // inside the checkout, but not where lib.ops is defined
    });
    const r = await p.prewarm(p.prEnv(7, "cpu"), ["--workers", "2"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.report?.counts).toEqual({ unchanged: 4, compiled: 0, cached: 0, missing: 2, failed: 0 });
    expect(r.report?.left).toEqual([
      {
        name: "json.fwd_kernel (lib/ops.py)",
        why: expect.stringMatching(/^json imports from .*json.*, not lib\/ops\.py/),
      },
      {
        name: "lib.ops.fwd_kernel (lib/__init__.py)",
        why: expect.stringMatching(
          /^lib\.ops imports from .*lib\/ops\.py, not lib\/__init__\.py in the checkout/,
        ),
      },
    ]);
    // The GPU job compiles the two itself, and its report says the prewarm left them to it.
    const gpu = await p.gpuJob(p.prEnv(7, "gpu"));
    expect(kernels(gpu.report)?.compiled).toBe(2);
    expect(gpu.report.cpuPrewarm).toMatchObject({
      compiledAhead: 0,
      stillCompiled: 2,
      why: { leftByPrewarm: 2, notInPlan: 0 },
    });
  });

  it("a checkout file that is a link to a file outside the checkout: every entry of it missing, none compiled", async () => {
    const p = prewarmProject();
    await p.mainJob();
    // The pull request makes lib/ops.py a link to a copy outside the checkout, with bwd_kernel changed.
    const outside = path.join(p.root, "elsewhere", "ops.py");
    fs.mkdirSync(path.dirname(outside));
    fs.writeFileSync(outside, EDITS.bwd(OPS_PY));
    p.git("checkout", "-q", "-b", "pr", "main");
    fs.rmSync(path.join(p.dir, "lib", "ops.py"));
    fs.symlinkSync(outside, path.join(p.dir, "lib", "ops.py"));
    p.git("add", "lib/ops.py");
    p.git("commit", "-q", "-m", "ops from elsewhere");

    const r = await p.prewarm(p.prEnv(7, "cpu"));
    expect(r.code, r.stderr).toBe(0);
    expect(r.report?.counts).toEqual({ unchanged: 0, compiled: 0, cached: 0, missing: 6, failed: 0 });
    expect(r.report?.left[0]?.why).toMatch(
      /^lib\.ops imports from .*elsewhere\/ops\.py, not lib\/ops\.py in the checkout/,
    );
    expect(p.plans("pr/7").get(r.report?.key as string)?.prewarmed?.compiled).toEqual([]);
  });
});
