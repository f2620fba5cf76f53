import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EDITS, kernels, mainPlanEntries, prewarmProject } from "../../helpers/cpu-prewarm-project.js";

/*
 * What a plan's values may make a compile worker do (docs/cpu-prewarm.md): a plan is data a job wrote,
 * and each of these once made `kcache prewarm --cpu` do what no plan should (found by an adversary
 * pass: a helper given the docs' promises, not the code's intent).
 */
describe("a plan entry's environment: only what Triton's cache key reads, never a path", () => {
  it("variables that would make a GPU visible, move the cache or that Triton's key does not read leave their entry to the GPU job, and the other entries compile as they would", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
    const bwd = mainPlanEntries(p).flatMap((e, i) => (e.qualname === "bwd_kernel" ? [i] : []));
    expect(bwd).toHaveLength(4);
    const elsewhere = path.join(p.root, "written-elsewhere");
    p.tamper("branch/main", (plan) => {
      const [a, b] = bwd.map((i) => plan.entries[i]);
      // The first is compiled first by the one worker: it must not leave its variables to the next.
      if (a) a.env = { TRITON_CACHE_DIR: elsewhere, CUDA_VISIBLE_DEVICES: "0" };
      if (b) b.env = { LD_BIND_NOW: "1" };
    });
    const env = p.prEnv(7, "cpu");
    const r = await p.prewarm(env, ["--workers", "1"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.report?.counts).toMatchObject({ compiled: 2, failed: 2, unchanged: 2 });
    expect(r.report?.left.map((l) => l.why)).toEqual([
      expect.stringContaining("the plan sets TRITON_CACHE_DIR, which names a path"),
      expect.stringContaining("the plan sets LD_BIND_NOW, which Triton's cache key does not read"),
    ]);
    expect(fs.existsSync(elsewhere), "a compile went to the plan's folder").toBe(false);
    // The two it compiled are in the pull request's key: its GPU job compiles only the two left.
    const gpu = await p.gpuJob(p.prEnv(7, "gpu"));
    expect(kernels(gpu.report)?.compiled).toBe(2);
  });

  it("a variable of the plan with a NUL or a line break refuses the plan whole (a warning, nothing compiled)", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
    p.tamper("branch/main", (plan) => {
      const e = plan.entries[0];
      if (e) e.env = { TRITON_SIM_CODEGEN: "a\u0000b" };
    });
    const r = await p.prewarm(p.prEnv(7, "cpu"));
    expect(r.code, r.stderr).toBe(0);
    expect(r.report?.outcome).toBe("plan-refused");
    expect(r.stderr).toMatch(/is damaged at "entries"\.0\."env"\."TRITON_SIM_CODEGEN"/);
    expect(p.manifests("pr/7")).toEqual([]);
  });
});

describe("a plan's names are looked up where they are defined", () => {
  it("a name reached through an installed package's lazy __getattr__ (as torch's _inductor) imports nothing", async () => {
    const p = prewarmProject();
    await p.mainJob();
    // An installed package that imports a submodule when an attribute is asked for, as torch does.
    const site = path.join(p.root, "site");
    const marker = path.join(p.root, "lazy-import-ran");
    fs.mkdirSync(path.join(site, "biglib"), { recursive: true });
    fs.writeFileSync(
      path.join(site, "biglib", "__init__.py"),
      "import importlib\n\n\ndef __getattr__(name):\n    return importlib.import_module(f'biglib.{name}')\n",
    );
    fs.writeFileSync(
      path.join(site, "biglib", "_inductor.py"),
      `open(${JSON.stringify(marker)}, "w").close()\n`,
    );
    // The pull request's kernels import it (the checkout may import what it likes).
    p.pullRequest("pr", { file: "lib/ops.py", change: (s) => `import biglib\n${EDITS.bwd(s)}` });
    const bwd = mainPlanEntries(p).flatMap((e, i) => (e.qualname === "bwd_kernel" ? [i] : []));
    p.tamper("branch/main", (plan) => {
      const [a, b] = bwd.map((i) => plan.entries[i]);
      if (a) a.qualname = "biglib._inductor";
      if (b) b.constexprs = [[[2], { jit: "biglib:_inductor" }]];
    });
    const env = p.prEnv(7, "cpu");
    const r = await p.prewarm({ ...env, PYTHONPATH: `${env.PYTHONPATH}:${site}` });
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(marker), "the plan imported biglib._inductor").toBe(false);
    // Both entries left to the GPU job, the name not found where it is defined; the rest compiled
    // (the import line moved fwd_kernel too: 2 of fwd_kernel's and the other 2 of bwd_kernel's).
    expect(r.report?.counts).toMatchObject({ compiled: 4, missing: 1, failed: 1 });
    expect(r.report?.left.map((l) => l.why)).toEqual([
      "AttributeError: _inductor",
      "AttributeError: _inductor",
    ]);
  });
});

describe("kcache prewarm --cpu --timeout", () => {
  it("a timeout longer than Node's timers keep (25 days) is a long one, not an instant one; 0s is refused", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
    const long = await p.prewarm(p.prEnv(7, "cpu"), ["--timeout", "25d"]);
    expect(long.code, long.stderr).toBe(0);
    expect(long.report?.counts).toMatchObject({ compiled: 4, failed: 0 });
    const zero = await p.prewarm(p.prEnv(8, "cpu"), ["--timeout", "0s"]);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain("--timeout 0s: give the workers some time");
  });
});

describe("what a plan says never becomes a line of its own", () => {
  it("a plan key holding a GitHub workflow command is quoted in the warning and the --strict error, never a line of its own", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
    p.tamper("branch/main", (plan) => {
      (plan as unknown as Record<string, unknown>)["zz\n::error title=forged::owned\n"] = 1;
    });
    const env = { ...p.prEnv(7, "cpu") };
    for (const args of [[], ["--strict"]]) {
      const r = await p.prewarm(env, args);
      expect(r.stderr).toContain("forged");
      // The runner reads any line starting "::" (after blanks) as a command: none may come from the plan.
      expect(r.stderr).not.toMatch(/^[ \t]*::error/m);
    }
  });
});
