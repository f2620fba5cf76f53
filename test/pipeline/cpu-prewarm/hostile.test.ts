import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type CliResult, runCli } from "../../helpers/cli.js";
import { EDITS, kernels, mainPlanEntries, prewarmProject } from "../../helpers/cpu-prewarm-project.js";

/*
 * `kcache prewarm --cpu` against what a hostile store or a pull request's code (which its workers run)
 * can do, and against bad luck: each promise of docs/cpu-prewarm.md that was once broken here.
 */

describe("kcache prewarm --cpu imports only the checkout's own modules", () => {
  it("a plan naming an installed module (as an entry or as a JIT constexpr) does not run it", async () => {
    const p = prewarmProject();
    await p.mainJob();
    // Installed modules (on PYTHONPATH, outside the checkout) that say when they are imported.
    const site = path.join(p.root, "site");
    fs.mkdirSync(site);
    for (const m of ["evil_entry", "evil_value"])
      fs.writeFileSync(
        path.join(site, `${m}.py`),
        `open(${JSON.stringify(path.join(p.root, m))}, "w").close()\n`,
      );
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.helper });
    p.tamper("branch/main", (plan) => {
      const [a, b] = plan.entries;
      if (a) a.module = "evil_entry";
      if (b) b.constexprs = [[[2], { jit: "evil_value:x" }]];
    });
    const env = p.prEnv(7, "cpu");
    const r = await p.prewarm({ ...env, PYTHONPATH: `${env.PYTHONPATH}:${site}` });
    expect(r.code, r.stderr).toBe(0);
    expect(fs.existsSync(path.join(p.root, "evil_entry")), "the entry's module ran").toBe(false);
    expect(fs.existsSync(path.join(p.root, "evil_value")), "the constexpr's module ran").toBe(false);
    expect(r.stderr).toContain(
      `evil_entry imports from ${path.join(fs.realpathSync(site), "evil_entry.py")}, not lib/ops.py in the checkout`,
    );
  });
});

describe("kcache prewarm --cpu builds on its own workload's key only", () => {
  it("the newest key of a workload whose prefix extends this one's (ops-big) is not taken", async () => {
    const p = prewarmProject();
    fs.writeFileSync(
      path.join(p.dir, "lib", "big.py"),
      "import triton\n\n\n@triton.jit\ndef big(x_ptr, n):\n    pass\n",
    );
    const job2 = `import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\nfrom triton.runtime.jit import Pointer\nfrom lib import big\nbig.big[(1,)](Pointer("fp32"), 7)\n`;
    fs.writeFileSync(path.join(p.dir, "job2.py"), job2);
    const yml = fs.readFileSync(path.join(p.dir, "kcache.yml"), "utf8");
    p.commit(
      "kcache.yml",
      `${yml}  big:\n    prefix: ops-big\n    commands:\n      - name: job2\n        run: python3 job2.py\n`,
    );
    p.git("add", ".");
    p.git("commit", "-q", "-m", "big");
    const main = await p.mainJob();
    // The other workload saves after: its key is the newest in the scope.
    await new Promise((r) => setTimeout(r, 50));
    const { GITHUB_EVENT_PATH: _, GITHUB_HEAD_REF: _h, GITHUB_BASE_REF: _b, ...pr } = p.prEnv(1, "big");
    const big: CliResult = await runCli(["run", "--profile", "big", "--json"], {
      env: { ...pr, GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" },
      cwd: p.dir,
    });
    expect(big.code, big.stderr).toBe(0);
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
    const r = await p.prewarm(p.prEnv(7, "cpu"));
    expect(r.code, r.stderr).toBe(0);
    expect(r.report?.base).toBe(main.report.key);
    expect(r.report?.counts).toMatchObject({ compiled: 4, unchanged: 2 });
  });
});

describe("kcache prewarm --cpu ends at --timeout", () => {
  it("a worker that leaves a daemon holding its stderr does not hold the prewarm past its timeout", async () => {
    const p = prewarmProject();
    await p.mainJob();
    const pidFile = path.join(p.root, "daemon.pid");
    // The library, imported by a worker, starts a process in a session of its own (out of reach of the
    // group kill) that inherits stderr and outlives the worker.
    const daemon = [
      "import os, subprocess, sys",
      `if "compile_plan" in sys.argv[0]:`,
      `    d = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)`,
      `    open(${JSON.stringify(pidFile)}, "a").write(f"{d.pid}\\n")`,
      "",
    ].join("\n");
    p.pullRequest("pr", { file: "lib/ops.py", change: (s) => `${daemon}${EDITS.bwd(s)}` });
    try {
      const t0 = Date.now();
      const r = await p.prewarm(p.prEnv(7, "cpu"), ["--timeout", "5s", "--workers", "1"]);
      expect(r.code, r.stderr).toBe(0);
      expect((Date.now() - t0) / 1000).toBeLessThan(30);
    } finally {
      for (const pid of fs.existsSync(pidFile) ? fs.readFileSync(pidFile, "utf8").split("\n") : [])
        try {
          if (pid) process.kill(Number(pid), "SIGKILL");
        } catch {}
    }
  });

  it("the entries of a worker killed at the timeout are named as left, and the GPU job's report says so", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
    const env = { ...p.prEnv(7, "cpu"), TRITON_SIM_COMPILE_MS: "60000" };
    const r = await p.prewarm(env, ["--timeout", "3s", "--workers", "1"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.report?.counts).toMatchObject({ compiled: 0, unchanged: 2, failed: 4 });
    expect(r.report?.left.filter((l) => l.name.startsWith("lib.ops.bwd_kernel"))).toHaveLength(4);
    const gpu = await p.gpuJob(p.prEnv(7, "gpu"));
    expect(kernels(gpu.report)?.compiled).toBe(4);
    expect(gpu.report.cpuPrewarm?.why).toEqual({ leftByPrewarm: 4, notInPlan: 0 });
  });
});

describe("kcache prewarm --cpu reads its workers' results as data the pull request's code can write", () => {
  it("lines of the wrong shape in a results file are ignored, not a crash", async () => {
    const p = prewarmProject();
    await p.mainJob();
    const forge = [
      "import json, sys",
      `if "compile_plan" in sys.argv[0]:`,
      `    open(sys.argv[4], "a").write(json.dumps({"i": 0, "outcome": "failed", "why": 5}) + "\\n" + json.dumps({"i": 1, "outcome": "toString"}) + "\\n")`,
      "",
    ].join("\n");
    p.pullRequest("pr", { file: "lib/ops.py", change: (s) => `${forge}${s}` });
    const r = await p.prewarm(p.prEnv(7, "cpu"), ["--workers", "1"]);
    expect(r.code, r.stderr).toBe(0);
    expect(Object.keys(r.report?.counts ?? {}).sort()).toEqual([
      "cached",
      "compiled",
      "failed",
      "missing",
      "unchanged",
    ]);
    expect(mainPlanEntries(p)).toHaveLength(6);
  });
});
