import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { RUN_REPORT_SCHEMA, type RunReport } from "../../src/pipeline/run-profile.js";
import { runCli } from "../helpers/cli.js";
import { runSandboxProfile } from "../helpers/profile.js";
import { readCommandFile } from "../helpers/runner-files.js";
import { sandbox, tempDir } from "../helpers/sandbox.js";

const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

function project(profile: string) {
  const dir = tempDir("kcache-run");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  path: ${path.join(dir, "store")}\nkey:\n  prefix: sim\nprofiles:\n${profile}`,
  );
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    CACHE_ROOT: path.join(dir, "cache-a"),
    KCACHE_STATE_DIR: path.join(dir, "state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "c".repeat(40),
    GITHUB_OUTPUT: path.join(dir, "gh-output"),
    GITHUB_STEP_SUMMARY: path.join(dir, "gh-summary.md"),
    RUNNER_TEMP: path.join(dir, "runner-temp"),
  };
  return { dir, env };
}

const BENCH = `  bench:
    expect: warm
    env:
      PYTHONPATH: ${SIM}
      TRITON_SIM_COMPILE_MS: "2"
    commands:
      - name: workload
        run: python3 ${SIM}/workload.py 3 1 && python3 -c 'import json; json.dump({"results":[{"mode":m,"median_ms":1.0} for m in ("fwd","fwdbwd")]}, open("r.json","w"))'
    checks:
      - type: coverage
        file: r.json
        expect: {product: [{mode: [fwd, fwdbwd, bwd]}]}
        severity: warn
`;

describe("kcache run from the command line", () => {
  it("writes kcache-report.json, the step summary, annotations and step outputs", async () => {
    const p = project(BENCH);
    const cold = await runCli(["run", "--profile", "bench"], { env: p.env, cwd: p.dir });
    expect(cold.code).toBe(0);
    const reportFile = path.join(p.dir, "runner-temp", "kcache", "bench", "kcache-report.json");
    const report = JSON.parse(fs.readFileSync(reportFile, "utf8")) as RunReport;
    expect(report).toMatchObject({ schema: RUN_REPORT_SCHEMA, profile: "bench", passed: true, exitCode: 0 });
    expect(report.kernels).toMatchObject({ status: "available", compiled: 7 });
    expect(report.commands[0]?.kernels).toMatchObject({ compiled: 7, loaded: 1 });
    expect(report.save?.outcome).toBe("saved");

    expect(cold.stdout).toMatch(/::group::workload: python3/);
    expect(cold.stdout).toMatch(
      /^::warning (?=[^:]*file=r\.json)(?=[^:]*title=kcache check coverage r\.json)[^:]*::.*missing 1: mode=bwd/m,
    );
    expect(cold.stdout).toMatch(
      /\| ✅ workload \| [\d.]+ \| exit 0; 1 kernels loaded, 7 compiled \| 1 \| 7 \|/,
    );
    const summary = fs.readFileSync(p.env.GITHUB_STEP_SUMMARY as string, "utf8");
    expect(summary).toContain("### kcache run `bench`: passed");
    expect(readCommandFile(p.env.GITHUB_OUTPUT as string)).toEqual({
      "cache-hit": "false",
      "cache-primary-key": report.key,
      "cache-matched-key": "",
      "kernels-compiled": "7",
      "kernels-loaded": "1",
      saved: "true",
      report: reportFile,
    });

    // The same revision on another runner path: an exact hit, nothing compiled.
    fs.rmSync(p.env.GITHUB_OUTPUT as string);
    const warm = await runCli(["run", "--profile", "bench", "--json"], {
      env: {
        ...p.env,
        CACHE_ROOT: path.join(p.dir, "cache-b"),
        KCACHE_STATE_DIR: path.join(p.dir, "state-b"),
      },
      cwd: p.dir,
    });
    const w = JSON.parse(warm.stdout) as RunReport;
    expect(w).toMatchObject({
      passed: true,
      unexpectedCompile: null,
      restore: { cacheHit: true },
      kernels: { compiled: 0, loaded: 4 },
    });
    expect(readCommandFile(p.env.GITHUB_OUTPUT as string)["cache-hit"]).toBe("true");
  });

  it("fails with exit 6 on an error check, annotating the result file, and saves nothing", async () => {
    const p = project(BENCH.replace("severity: warn", "severity: error"));
    const r = await runCli(["run", "--profile", "bench"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(6);
    expect(r.stdout).toMatch(
      /^::error (?=[^:]*file=r\.json)(?=[^:]*title=kcache check coverage r\.json)[^:]*::/m,
    );
    expect(r.stdout).toContain("failed at check coverage r.json");
    expect(readCommandFile(p.env.GITHUB_OUTPUT as string).saved).toBe("false");
    expect(fs.existsSync(path.join(p.dir, "store", "manifests"))).toBe(false);
  });

  it("names the profiles when asked for one that does not exist", async () => {
    const p = project(BENCH);
    const r = await runCli(["run", "--profile", "nope"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/kcache\.yml: no profile "nope"; profiles are "bench"/);
  });
});

describe("expect: warm", () => {
  const workload = (plain: number) => ({
    expect: "warm",
    env: { PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "1" },
    commands: [{ name: "w", run: `python3 ${SIM}/workload.py ${plain} 0` }],
  });

  it("warns when kernels compile after an exact-key restore, or fails the run when set to", async () => {
    const sb = sandbox();
    const first = await runSandboxProfile(sb, workload(2));
    expect(first.report.kernels.compiled).toBe(2);
    // Same key, but this run needs a kernel the saved cache lacks.
    const more = workload(3);
    const warned = await runSandboxProfile(sb, more, {
      stateDir: path.join(sb.dir, "s2"),
      cachePath: path.join(sb.dir, "t2"),
    });
    expect(warned.report.restore?.cacheHit).toBe(true);
    expect(warned.report.unexpectedCompile).toMatch(
      /^1 kernels compiled after an exact-key restore \(expect: warm\): chunk_fwd_kernel_2/,
    );
    expect(warned.report).toMatchObject({ passed: true, exitCode: 0 });
    expect(warned.log.warnings.join("\n")).toMatch(/expect: warm/);

    const failed = await runSandboxProfile(
      sb,
      { ...more, "on-unexpected-compile": "fail" },
      { stateDir: path.join(sb.dir, "s3"), cachePath: path.join(sb.dir, "t3") },
    );
    expect(failed.report).toMatchObject({ passed: false, exitCode: 6, save: null });
    expect(failed.report.firstFailure).toMatch(/expect: warm/);
  });

  it("counts torch.compile's FX graph and AOTAutograd cache hits and misses, and a miss after an exact-key restore is not warm", async () => {
    const sb = sandbox();
    // torch._dynamo.utils.counters as torch keeps them, in a stand-in torch package.
    const fake = path.join(sb.dir, "faketorch");
    fs.mkdirSync(path.join(fake, "torch", "_dynamo"), { recursive: true });
    fs.writeFileSync(path.join(fake, "torch", "__init__.py"), "");
    fs.writeFileSync(path.join(fake, "torch", "_dynamo", "__init__.py"), "");
    fs.writeFileSync(
      path.join(fake, "torch", "_dynamo", "utils.py"),
      "import collections\ncounters = collections.defaultdict(collections.Counter)\n",
    );
    const job = (outcome: string) => ({
      expect: "warm",
      env: { PYTHONPATH: `${SIM}:${fake}`, TRITON_SIM_COMPILE_MS: "1" },
      commands: [
        { name: "kernels", run: `python3 ${SIM}/workload.py 1 0` },
        {
          name: "compile",
          run: `python3 -c 'import triton; from torch._dynamo.utils import counters; counters["inductor"]["fxgraph_cache_${outcome}"] += 2; counters["aot_autograd"]["autograd_cache_${outcome}"] += 1'`,
        },
      ],
    });
    const first = await runSandboxProfile(sb, job("miss"));
    expect(first.report.kernels.graphs).toEqual({
      fxgraphHits: 0,
      fxgraphMisses: 2,
      aotHits: 0,
      aotMisses: 1,
    });
    const warm = await runSandboxProfile(sb, job("hit"), {
      stateDir: path.join(sb.dir, "s2"),
      cachePath: path.join(sb.dir, "t2"),
    });
    expect(warm.report.kernels.graphs).toEqual({
      fxgraphHits: 2,
      fxgraphMisses: 0,
      aotHits: 1,
      aotMisses: 0,
    });
    expect(warm.report.unexpectedCompile).toBeNull();
    const missed = await runSandboxProfile(sb, job("miss"), {
      stateDir: path.join(sb.dir, "s3"),
      cachePath: path.join(sb.dir, "t3"),
    });
    expect(missed.report.restore?.cacheHit).toBe(true);
    expect(missed.report.unexpectedCompile).toMatch(/2 FX graph and 1 AOTAutograd cache misses/);
  });
});
