import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli.js";
import { lazyKcacheYml } from "../../helpers/lazy-project.js";
import { tempDir } from "../../helpers/sandbox.js";

/**
 * A project whose Triton cache is restored lazily (`eager`: only by runs given --lazy): a "full" job
 * and a "some" job using 2 of its kernels.
 */
function project(eager = false) {
  const dir = tempDir("kcache-lazy-run");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    lazyKcacheYml({
      store: [`store:\n  path: ${path.join(dir, "store")}`],
      profiles: { full: "8 2", some: "2 0", idle: { run: 'python3 -c "print(1)"' } },
      eager,
    }),
  );
  const env = (runner: string, sha: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: dir,
    CACHE_ROOT: path.join(dir, runner, "triton"),
    KCACHE_STATE_DIR: path.join(dir, runner, "state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: "refs/heads/main",
    GITHUB_EVENT_NAME: "push",
    GITHUB_SHA: sha.repeat(40),
  });
  const run = async (profile: string, runner: string, sha: string, flags: string[] = []) => {
    const r = await runCli(["run", "--profile", profile, "--json", ...flags], {
      env: env(runner, sha),
      cwd: dir,
    });
    expect(r.code, r.stderr).toBe(0);
    return { report: JSON.parse(r.stdout), stderr: r.stderr };
  };
  const stats = async () => {
    const r = await runCli(["stats", "--json"], { env: env("any", "e"), cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  };
  return { dir, run, stats };
}

describe("kcache run with restore: lazy", () => {
  it("fetches ahead what the last job used, serves the job's other lookups from the store, and the job compiles 0", async () => {
    const p = project();
    const cold = await p.run("full", "r1", "a");
    expect(cold.report.save.outcome).toBe("saved");
    // A job that used 2 kernels: its save records that use.
    const some = await p.run("some", "r2", "b");
    expect(some.report.kernels.compiled).toBe(0);

    const warm = await p.run("full", "r3", "c");
    expect(warm.report.kernels.compiled).toBe(0);
    expect(warm.report.restore.lazy.prefetched).toBeGreaterThan(0);
    expect(warm.report.restore.lazy.deferred).toBeGreaterThan(0);
    expect(warm.report.lazy).toMatchObject({ failed: 0, storeDown: null });
    expect(warm.report.lazy.onDemand).toBeGreaterThan(0);
    expect(warm.report.lazy.onDemand + warm.report.lazy.neverFetched).toBe(warm.report.restore.lazy.deferred);
    expect(warm.stderr).toMatch(/lazy restore: \d+ entries fetched ahead, \d+ fetched when looked up/);
  });

  it("after a job that used nothing, the next job gets every entry it looks up on demand and compiles 0", async () => {
    const p = project();
    await p.run("full", "r1", "a");
    const idle = await p.run("idle", "r2", "b");
    expect(idle.report.save.outcome).toMatch(/saved|nothing-new/);
    const next = await p.run("full", "r3", "c");
    expect(next.report.restore.lazy.prefetched).toBe(0);
    expect(next.report.kernels.compiled).toBe(0);
    expect(next.report.lazy.onDemand).toBeGreaterThan(0);
    // The idle job's save kept every entry in the key, though it fetched none of them.
    expect(next.report.restore.lazy.deferred).toBe(idle.report.restore.entriesRestored);
    // kcache stats sums what the default branch's lazy runs fetched, ahead and on demand.
    const stats = await p.stats();
    const week = stats.weeks.find((w: { lazy: unknown }) => w.lazy);
    expect(week.lazy).toMatchObject({ onDemand: next.report.lazy.onDemand, prefetched: 0 });
    expect(week.lazy.neverFetched).toBe(next.report.lazy.neverFetched);
  });
});

describe("kcache run --lazy on a key saved without it", () => {
  it("reads the key whole once and says why, its save packs the key again in frames, and the next run places about what the job uses", async () => {
    const p = project(true);
    // The key saved eagerly by two jobs: one compiled everything, the next used 2 of its kernels.
    expect((await p.run("full", "r1", "a")).report.save.outcome).toBe("saved");
    expect((await p.run("some", "r2", "b")).report.save.outcome).toBe("nothing-new");

    const first = await p.run("some", "r3", "c", ["--lazy"]);
    const whole = first.report.restore.lazy.readWhole["no-frames"];
    expect(whole.bytes).toBe(first.report.restore.bytesRestored);
    expect(first.stderr).toMatch(/pack\(s\) read whole .* written before the cache was lazy/);
    expect(first.report.lazy.readWhole["no-frames"]).toEqual(whole);
    // Nothing new, yet the save writes the key's entries in frames of their own.
    expect(first.report.save.reframed).toMatchObject({ reason: "no-frames", entries: whole.entries });
    expect(first.stderr).toMatch(/packed again, each in frames of its own/);

    const next = await p.run("some", "r4", "d", ["--lazy"]);
    expect(next.report.kernels.compiled).toBe(0);
    expect(next.report.restore.lazy.readWhole["no-frames"]).toBeUndefined();
    expect(next.report.restore.lazy.deferred).toBeGreaterThan(0);
    // What the job used, as its save learnt it from the hook: the restore placed at most 1.1x that.
    const used = next.report.save.usage.live.bytes;
    expect(used).toBeGreaterThan(0);
    expect(next.report.restore.bytesRestored).toBeLessThanOrEqual(1.1 * used);
    expect(next.report.save).toMatchObject({ outcome: "nothing-new", reframed: null });
    // kcache stats keeps what the whole reads were, and why.
    const week = (await p.stats()).weeks.find((w: { lazy: unknown }) => w.lazy);
    expect(week.lazy.readWhole["no-frames"]).toEqual(whole);
  });
});
