import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { AutotuneSettings } from "../../../src/cache/autotune/settings.js";
import type { JobContext } from "../../../src/cache/job-context.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { decodeManifest } from "../../../src/manifest/manifest.js";
import { entryNames } from "../../helpers/entry-compare.js";
import { runSimWorkload } from "../../helpers/python-sim.js";
import { type Sandbox, sandbox } from "../../helpers/sandbox.js";

const H200 = "NVIDIA H200";
const BENCH_ENV = { FLA_BENCH_REP_MS: "200", FLA_BENCH_WARMUP_MS: "40" };

/** A job context with a profile's autotune settings. */
async function job(
  sb: Sandbox,
  opts: {
    folder: string;
    rev: string;
    profile: string;
    benchmark?: boolean;
    policy?: AutotuneSettings["policy"];
    device?: string;
    env?: Record<string, string>;
    state?: string;
    extra?: Record<string, unknown>;
  },
): Promise<JobContext> {
  const ctx = await sb.context({
    revision: opts.rev.repeat(40),
    stateDir: path.join(sb.dir, `state-${opts.state ?? opts.rev}`),
    config: sb.config({
      caches: [{ name: "triton", kind: "triton", path: opts.folder, ...opts.extra }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    }),
  });
  ctx.autotune = {
    policy: opts.policy ?? (opts.benchmark ? "pinned" : "any"),
    producer: {
      profile: opts.profile,
      benchmark: opts.benchmark ?? false,
      device: opts.device ?? H200,
      env: opts.env ?? (opts.benchmark ? BENCH_ENV : {}),
    },
    salt: "none",
    workdir: sb.dir,
    otherRevisions: [],
  };
  return ctx;
}

/** The autotune result files in a folder. */
function winners(root: string): string[] {
  return fs
    .readdirSync(root, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".autotune.json") && !f.startsWith(".kcache-"));
}

/** One job: restore, the simulated workload (plain and autotuned kernels), save. */
async function runJob(ctx: JobContext, prefix = "chunk") {
  const r = await restore(ctx);
  const work = r.caches[0]?.path as string;
  const sim = runSimWorkload(work, { plain: 2, autotuned: 2, prefix });
  const s = await save(ctx);
  return { r, sim, s, work };
}

function manifestOf(sb: Sandbox, key: string) {
  const file = path.join(sb.store, "manifests", encodeURIComponent("branch/main"), encodeURIComponent(key));
  return decodeManifest(fs.readFileSync(file), file);
}

describe("autotune results carry their producer, and a profile is given only what its policy allows", () => {
  it("a benchmark's results record who tuned them; the record survives a delta save and a consolidation", async () => {
    const sb = sandbox();
    const bench = (rev: string, folder: string) =>
      job(sb, { folder: path.join(sb.dir, folder), rev, profile: "kda-bench", benchmark: true });
    const first = await runJob(await bench("1", "a"));
    const m1 = manifestOf(sb, first.s.primaryKey);
    expect(m1.tunings).toEqual([
      {
        id: 0,
        profile: "kda-bench",
        benchmark: true,
        device: H200,
        env: BENCH_ENV,
        revision: "1".repeat(40),
        at: expect.any(String),
      },
    ]);
    const tuned = m1.entries.filter((e) => e.tunedBy !== undefined);
    expect(tuned).toHaveLength(2); // the two autotuned kernels' results, nothing else
    // Next revision, another runner: the winners are given (pinned), a new kernel is compiled.
    const second = await runJob(await bench("2", "b"), "other");
    expect(second.r.autotune?.given.map((g) => g.producer?.revision)).toEqual([
      "1".repeat(40),
      "1".repeat(40),
    ]);
    expect(second.sim.written.filter((w) => tuned.some((t) => t.name === w))).toEqual([]);
    const m2 = manifestOf(sb, second.s.primaryKey);
    const carried = m2.entries.filter((e) => tuned.some((t) => t.name === e.name));
    expect(carried.map((e) => m2.tunings?.find((t) => t.id === e.tunedBy)?.revision)).toEqual([
      "1".repeat(40),
      "1".repeat(40),
    ]);
    // A consolidation repacks the entries; the producers stay. (An entry the job no longer has makes
    // the packs partly dead: with max-dead-share 0 the save consolidates.)
    const c3 = await bench("3", "c");
    c3.save = { ...c3.save, maxDeadShare: 0, maxChain: 1 };
    const r3 = await restore(c3);
    const work3 = r3.caches[0]?.path as string;
    const plainEntry = entryNames(work3).find((n) => !winners(work3).some((w) => w.startsWith(`${n}/`)));
    fs.rmSync(path.join(work3, plainEntry as string), { recursive: true });
    const third = { s: await save(c3) };
    expect(third.s.consolidated).toBe(true);
    const m3 = manifestOf(sb, third.s.primaryKey);
    expect(
      m3.entries
        .filter((e) => tuned.some((t) => t.name === e.name))
        .map((e) => m3.tunings?.find((t) => t.id === e.tunedBy)?.revision),
    ).toEqual(["1".repeat(40), "1".repeat(40)]);
  });

  it("a test job's autotune results are never given to a benchmark profile; its binaries are", async () => {
    const sb = sandbox();
    const tests = await runJob(await job(sb, { folder: path.join(sb.dir, "t"), rev: "1", profile: "tests" }));
    const testWinners = winners(path.join(sb.dir, "t"));
    expect(testWinners).toHaveLength(2);
    const ctx = await job(sb, {
      folder: path.join(sb.dir, "b"),
      rev: "2",
      profile: "kda-bench",
      benchmark: true,
    });
    const r = await restore(ctx);
    expect(r.autotune?.withheld.map((w) => w.reason)).toEqual(["not-a-benchmark", "not-a-benchmark"]);
    expect(r.autotune?.given).toEqual([]);
    const work = r.caches[0]?.path as string;
    expect(winners(work)).toEqual([]);
    expect(entryNames(work)).toHaveLength(tests.s.entries - 2);
    // The job tunes its two kernels again, from the cached binaries: nothing else compiles.
    const sim = runSimWorkload(work, { plain: 2, autotuned: 2 });
    expect(winners(work)).toHaveLength(2);
    expect(sim.written).toHaveLength(2);
    // The simulated tuning gives the same bytes the test job's did: still the benchmark's own
    // winners, so the next benchmark run is given them instead of tuning again.
    const m = manifestOf(sb, (await save(ctx)).primaryKey);
    const mine = m.entries.filter((e) => sim.written.includes(e.name));
    expect(mine.map((e) => m.tunings?.find((t) => t.id === e.tunedBy)?.profile)).toEqual([
      "kda-bench",
      "kda-bench",
    ]);
    const next = await restore(
      await job(sb, { folder: path.join(sb.dir, "b2"), rev: "3", profile: "kda-bench", benchmark: true }),
    );
    expect(next.autotune?.withheld).toEqual([]);
    expect(next.autotune?.given.map((g) => g.producer?.profile)).toEqual(["kda-bench", "kda-bench"]);
  });

  it("pinned results come from the same device model and the same autotune-env values only", async () => {
    const sb = sandbox();
    await runJob(
      await job(sb, { folder: path.join(sb.dir, "a"), rev: "1", profile: "kda-bench", benchmark: true }),
    );
    const other = await job(sb, {
      folder: path.join(sb.dir, "b"),
      rev: "2",
      profile: "kda-bench",
      benchmark: true,
      device: "NVIDIA H100 80GB HBM3",
    });
    expect((await restore(other)).autotune?.withheld.map((w) => w.reason)).toEqual([
      "other-device",
      "other-device",
    ]);
    const env = await job(sb, {
      folder: path.join(sb.dir, "c"),
      rev: "2",
      profile: "kda-bench",
      benchmark: true,
      env: { ...BENCH_ENV, FLA_BENCH_REP_MS: "100" },
      state: "c",
    });
    expect((await restore(env)).autotune?.withheld.map((w) => w.reason)).toEqual(["other-env", "other-env"]);
    const same = await job(sb, {
      folder: path.join(sb.dir, "d"),
      rev: "2",
      profile: "nightly-bench",
      benchmark: true,
      state: "d",
    });
    const given = await restore(same);
    expect(given.autotune?.given).toHaveLength(2);
    expect(winners(path.join(sb.dir, "d"))).toHaveLength(2);
  });

  it("autotune: fresh restores every binary and no autotune result", async () => {
    const sb = sandbox();
    const first = await runJob(
      await job(sb, { folder: path.join(sb.dir, "a"), rev: "1", profile: "kda-bench", benchmark: true }),
    );
    const ctx = await job(sb, {
      folder: path.join(sb.dir, "b"),
      rev: "2",
      profile: "kda-bench",
      benchmark: true,
      policy: "fresh",
    });
    const r = await restore(ctx);
    expect(r.entriesRestored).toBe(first.s.entries);
    expect(r.autotune?.withheld.map((w) => w.reason)).toEqual(["fresh", "fresh"]);
    expect(winners(path.join(sb.dir, "b"))).toEqual([]);
    expect(entryNames(path.join(sb.dir, "b"))).toHaveLength(first.s.entries - 2);
    const sim = runSimWorkload(path.join(sb.dir, "b"), { plain: 2, autotuned: 2 });
    expect(sim.written).toHaveLength(2); // the two results, tuned again; no kernel compiled
  });

  it("on a runner that keeps its folder, a pinned job works without the folder's winners, and the folder keeps them", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "runner");
    // A test job left its winners (and binaries) in the runner's folder.
    runSimWorkload(folder, { plain: 2, autotuned: 2 });
    const local = winners(folder);
    expect(local).toHaveLength(2);
    const ctx = await job(sb, { folder, rev: "1", profile: "kda-bench", benchmark: true });
    const r = await restore(ctx);
    const work = r.caches[0]?.path as string;
    expect(path.basename(work)).toMatch(/^\.kcache-job-/);
    expect(r.autotune?.withheld.map((w) => w.reason)).toEqual(["unknown-producer", "unknown-producer"]);
    expect(winners(work)).toEqual([]);
    expect(winners(folder).filter((w) => !w.startsWith(".kcache-"))).toEqual(local);
    const sim = runSimWorkload(work, { plain: 2, autotuned: 2 });
    expect(sim.written).toHaveLength(2); // tuned again; every binary was there
  });
});
