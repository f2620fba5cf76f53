import fs from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/history/run-record.js";
import { weeklyStats } from "../../src/history/stats.js";
import { entryCost } from "../../src/history/time-saved.js";
import { rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";

/** What a kernel "costs to compile" between a restore and its save in the test's jobs. */
const COMPILE_MS = 400;

/** Kernel entries in a Triton cache folder: those with a group file. */
function kernelsIn(folder: string): number {
  if (!fs.existsSync(folder)) return 0;
  return fs
    .readdirSync(folder)
    .filter((d) => fs.statSync(path.join(folder, d)).isDirectory())
    .filter((d) => fs.readdirSync(path.join(folder, d)).some((f) => f.startsWith("__grp__"))).length;
}

describe("kcache stats for the drop-in path (restore and save around the user's own steps)", () => {
  it("ten restore/save pairs without kcache's hook, commit by commit on fresh runners: ten runs, their hit rate, entries (never called kernels) and a time-saved estimate", async () => {
    const p = project({ prefix: "dropin" });
    const r = rng(7);
    // Commit i compiles these many new kernels (the first compiles the workload from nothing).
    const fresh = [6, 1, 4, 1, 4, 1, 4, 1, 4, 1];
    let made = 0;
    let found = 0;
    for (const [i, n] of fresh.entries()) {
      const runner = path.join(p.dir, `runner-${i}`);
      const env = {
        ...p.env,
        CACHE_ROOT: path.join(runner, "triton"),
        KCACHE_STATE_DIR: path.join(runner, "state"),
        GITHUB_SHA: String(i).repeat(40).slice(0, 40),
      };
      const restored = await runCli(["restore", "--json"], { env, cwd: p.dir });
      expect(restored.code, restored.stderr).toBe(0);
      // Kernels found without compiling: entries with a group file (launchers are entries, not kernels).
      found += kernelsIn(env.CACHE_ROOT);
      for (let k = 0; k < n; k++) {
        writeKernelEntry(env.CACHE_ROOT, tritonKeyName(`k${made++}`), `kernel_${made}`, 4000, r);
        await sleep(COMPILE_MS); // the job compiling it
      }
      // Each job also builds a launcher: a new entry, but no kernel.
      const launcher = path.join(env.CACHE_ROOT, tritonKeyName(`launcher-${i}`));
      fs.mkdirSync(launcher, { recursive: true });
      fs.writeFileSync(path.join(launcher, "__triton_launcher.cpython-312-x86_64-linux-gnu.so"), `l${i}`);
      const saved = await runCli(["save"], { env, cwd: p.dir });
      expect(saved.code, saved.stderr).toBe(0);
    }
    const stats = JSON.parse((await runCli(["stats", "--json"], { env: p.env, cwd: p.dir })).stdout);
    expect(stats).toMatchObject({ scope: "branch/main", runs: 10 });
    const [week] = stats.weeks;
    expect(week).toMatchObject({ prefix: "dropin", runs: 10, passed: 10 });
    // The first commit missed; every later one restored the commit before it.
    expect(week.hits).toEqual({ exact: 0, prefix: 9, miss: 1 });
    expect(week.hitRate).toBe(0.9);
    // No hook saw the job's kernels: the record counts entries with a group file, and says so.
    expect(week.kernelsCompiled).toBeNull();
    expect(week.kernelsLoaded).toBeNull();
    // Each later job found what the key before it held (eviction drops kernels no job read).
    expect(found).toBeGreaterThan(fresh[0] as number);
    expect(week.entries).toEqual({ runs: 10, new: made, found });
    // Learnt from the jobs' own seconds over their new kernels: near what the test spent per kernel.
    expect(week.entryCost.from).toBe("job-times");
    expect(week.entryCost.seconds).toBeGreaterThan((COMPILE_MS / 1000) * 0.4);
    expect(week.secondsSavedEstimate).toBeCloseTo(found * week.entryCost.seconds, 6);
    const text = await runCli(["stats"], { env: p.env, cwd: p.dir });
    expect(text.stdout).toMatch(
      new RegExp(
        `\\| 10 \\| 10 \\| 0 / 9 / 1 \\| 90% \\| - \\| - \\| .* \\| 10: ${made} / ${found} \\|$`,
        "m",
      ),
    );
    expect(text.stdout).toMatch(
      /one entry ≈ [\d.]+ s \(learnt from the jobs' seconds over their new entries \(no hook: entries, not kernels\)\)/,
    );
    expect(text.stdout).not.toMatch(/one kernel ≈/);
  });

  it("a repository on master: stats names the branch its runs are recorded for and the setting that picks it", async () => {
    const p = project({ prefix: "master" });
    const env = { ...p.env, GITHUB_REF: "refs/heads/master" };
    writeKernelEntry(p.cache, tritonKeyName("m"), "kernel_m", 4000, rng(3));
    expect((await runCli(["restore"], { env, cwd: p.dir })).code).toBe(0);
    expect((await runCli(["save"], { env, cwd: p.dir })).code).toBe(0);
    const none = await runCli(["stats"], { env: p.env, cwd: p.dir });
    expect(none.stderr).toContain("no runs recorded in local store");
    expect(none.stderr).toMatch(
      /for branch\/main; runs are recorded for branch\/master \(1\)\. If master is the default branch, set key\.default-branch: master in kcache\.yml/,
    );
    fs.appendFileSync(path.join(p.dir, "kcache.yml"), "  default-branch: master\n");
    const chosen = JSON.parse((await runCli(["stats", "--json"], { env: p.env, cwd: p.dir })).stdout);
    expect(chosen).toMatchObject({ scope: "branch/master", runs: 1 });
  });

  it("learns one kernel's cost from the hook's compile times first, else from the slope of job seconds over new kernels", () => {
    const rec = (compiled: number, extra: Partial<RunRecord>): RunRecord =>
      ({ hit: "prefix", kernels: { compiled, compileSeconds: null, loaded: 0 }, ...extra }) as RunRecord;
    // 10 s of fixed work plus 2 s per kernel: the slope is 2, whatever the fixed work.
    const jobs = [1, 3, 5].map((n) => rec(n, { jobSeconds: 10 + 2 * n }));
    expect(entryCost(jobs)).toEqual({ seconds: 2, from: "job-times" });
    // Two runs, or all alike: no slope; seconds per new kernel, which counts the fixed work too.
    const two = entryCost(jobs.slice(0, 2));
    expect(two?.from).toBe("job-times-upper-bound");
    expect(two?.seconds).toBeCloseTo((12 / 1 + 16 / 3) / 2, 9);
    const timed = rec(4, { kernels: { compiled: 4, compileSeconds: 6, loaded: 0 } as RunRecord["kernels"] });
    expect(entryCost([...jobs, timed])).toEqual({ seconds: 1.5, from: "compile-times" });
    expect(entryCost([rec(0, { jobSeconds: 5 })])).toBeNull();
  });

  it("a key made with hashFiles(...) is one workload, not a new row per edit of the files hashed", () => {
    const digest = (c: string) => c.repeat(64);
    const rec = (prefix: string, compiled: number): RunRecord =>
      ({
        prefix,
        startedAt: "2026-12-01T10:00:00.000Z",
        passed: true,
        hit: "prefix",
        kernels: { compiled, compileSeconds: null, loaded: 3 },
      }) as RunRecord;
    const weeks = weeklyStats([
      rec(`triton-Linux-${digest("a")}`, 2),
      rec(`triton-Linux-${digest("b")}`, 1),
      rec(`triton-Linux-${digest("c")}`, 4),
      rec("fla-kda-bench", 5),
    ]);
    expect(weeks.map((w) => [w.prefix, w.runs, w.kernelsCompiled]).sort()).toEqual([
      ["fla-kda-bench", 1, 5],
      ["triton-Linux-<hash>", 3, 7],
    ]);
  });
});
