import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCheck } from "../../src/checks/run-checks.js";
import { loadConfig } from "../../src/config/load.js";
import { tempDir } from "../helpers/sandbox.js";

const EXAMPLE = path.resolve(import.meta.dirname, "../../examples/fla-kda/kcache.yml");
const SHAPES = [
  [1, 1024, 4, 64],
  [2, 2048, 8, 64],
  [4, 4096, 16, 128],
  [8, 2048, 16, 128],
  [1, 8192, 32, 128],
  [2, 16384, 16, 64],
];
const MACHINE = { hostname: "a2-runner-3", device_platform: "npu", gpu_count: 1, device: "Ascend910B3" };
const timing = (base: number) => ({
  p50_ms: base,
  p95_ms: base * 1.2,
  mean_ms: base * 1.05,
  min_ms: base * 0.9,
});

/** benchmarks.ops.run --json: {"machine_info", "results": [{op, mode, B, T, H, D, median_ms, p20_ms, p80_ms}]}. */
function ordinary(op: string) {
  return {
    machine_info: MACHINE,
    results: SHAPES.flatMap(([B, T, H, D]) =>
      ["fwd", "fwdbwd"].map((mode) => ({ op, mode, B, T, H, D, median_ms: 2.5, p20_ms: 2.4, p80_ms: 2.7 })),
    ),
  };
}

/** benchmarks.ops.run --graph (graph_benchmark.py): the current run's results, and the baseline (none here). */
function graph() {
  return {
    current: {
      machine_info: MACHINE,
      results: [
        {
          op: "chunk_kda",
          shape: "smoke",
          mode: "fwdbwd",
          B: 1,
          T: 128,
          H: 2,
          D: 64,
          N: 2,
          dtype: "bfloat16",
          validation: "passed",
          eager: timing(1.8),
          capture_ms: 420.5,
          graph: timing(0.9),
        },
      ],
    },
    baseline: null,
  };
}

/** benchmark_kda_recurrent.py: 4 workloads x D in {64, 128} x state_v_first, 7 rounds. */
function recurrent() {
  const workloads: [string, number[]][] = [
    ["dense", [1, 1, 1, 1, 1, 1, 1, 1]],
    ["dense", [4, 4]],
    ["packed", [1, 1, 1, 1, 1, 1, 1, 1]],
    ["packed", [2, 6]],
  ];
  const results = workloads.flatMap(([layout, lengths]) =>
    [64, 128].flatMap((D) =>
      [false, true].map((state_v_first) => ({
        layout,
        lengths,
        H: 16,
        D,
        state_v_first,
        multibuffer_true_batch_medians_ms: [0.41, 0.4, 0.42, 0.4, 0.41, 0.4, 0.41],
        multibuffer_false_batch_medians_ms: [0.45, 0.44, 0.46, 0.45, 0.44, 0.45, 0.45],
        multibuffer_true_correctness: "passed",
        multibuffer_false_correctness: "passed",
        baseline_median_ms: 0.41,
        candidate_median_ms: 0.45,
      })),
    ),
  );
  return {
    machine_info: { ...MACHINE, triton_ascend_version: "3.2.1", torch_npu_version: "2.10.0.post7" },
    results,
    status: "passed",
    dtype: "float32",
    seed: 42,
    rounds: 7,
    numerical_ratio: 0.002,
  } as Record<string, unknown>;
}

type Files = Record<string, unknown>;

function goodFiles(): Files {
  const gdn2 = ordinary("chunk_gdn2");
  gdn2.results = gdn2.results.slice(0, 2).map((r) => ({ ...r, B: 1, T: 32768, H: 1, D: 32 }));
  return {
    "benchmark_chunk_gdn.json": ordinary("chunk_gdn"),
    "benchmark_chunk_gdn2.json": gdn2,
    "benchmark_chunk_kda.json": ordinary("chunk_kda"),
    "benchmark_fused_attnres.json": ordinary("fused_attnres"),
    "benchmark_kda_graph.json": graph(),
    "benchmark_kda_recurrent.json": recurrent(),
  };
}

const RAW = fs.readFileSync(EXAMPLE, "utf8");
const config = loadConfig({ file: EXAMPLE, env: { HOME: "/home/ci" } });
const bench = config.profiles["kda-bench"];
const pending = config.profiles["kda-graph-recurrent"];

/** The flags of FLA's published benchmarks/ops/run.py (its argparse, read on 2026-12-01). */
const RUN_PY_FLAGS = new Set([
  "--op",
  "--backend",
  "--custom-shapes",
  "--modes",
  "--json",
  "--base",
  "--list",
  "--from-diff",
  "--diff-base",
  "--diff-head",
]);

/** Every command line of a profile, parallel groups' included. */
function commandLines(profile: typeof bench): string[] {
  return (profile?.commands ?? []).flatMap((c) => ("parallel" in c ? c.parallel.map((p) => p.run) : [c.run]));
}

/** Runs every check of `profile` on `files`; returns failed check name -> message. */
async function failures(files: Files, profile = bench, count = 7): Promise<Record<string, string>> {
  const dir = tempDir("fla");
  for (const [f, v] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), JSON.stringify(v, null, 2));
  const results = await Promise.all(
    (profile?.checks ?? []).map((c, i) => runCheck(c, i, dir, {}, path.join(dir, "c.log"))),
  );
  expect(results).toHaveLength(count);
  return Object.fromEntries(results.filter((r) => !r.passed).map((r) => [r.name, r.message]));
}
const pendingFailures = (files: Files) => failures(files, pending, 4);

describe("examples/fla-kda/kcache.yml", () => {
  it("runs FLA's benchmark job as its workflow does: a2-4 runner, cards 0-3, chunk_gdn then chunk_gdn2 on card 0, one benchmark per other card", () => {
    expect(bench?.source).toEqual(["/usr/local/Ascend/ascend-toolkit/set_env.sh"]);
    expect(bench?.commands).toHaveLength(1);
    const [group] = bench?.commands ?? [];
    expect(group && "parallel" in group && group.parallel.map((c) => c.name)).toEqual([
      "chunk_gdn",
      "chunk_kda",
      "fused_attnres",
      "conv1d",
    ]);
    expect(group && "parallel" in group && group.devices).toEqual(["0", "1", "2", "3"]);
    const [gdn] = commandLines(bench);
    expect(gdn).toMatch(/--op chunk_gdn .*&& .*--op chunk_gdn2 .*gdn2_32k/);
    expect(bench?.env).toMatchObject({
      FLA_CI_ENV: "1",
      FLA_BENCH_WARMUP_MS: "25",
      FLA_BENCH_REP_MS: "100",
      FLA_BENCH_OP_WARMUP_ITERS: "3",
      ASCEND_RT_VISIBLE_DEVICES: "0,1,2,3",
      MPLBACKEND: "Agg",
    });
    expect(bench?.github?.["runs-on"]).toBe("linux-aarch64-a2-4");
    expect(bench?.github?.container).toEqual({
      image: "ascendai/cann:9.1.0-910b-ubuntu22.04-py3.12",
      options: "--shm-size 16g",
    });
    expect(config.key.prefix).toBe("fla-ascend-bench");
    expect(config.profiles["kda-tests"]?.github?.["runs-on"]).toBe("linux-aarch64-a2-1");
  });

  it("runs only flags FLA's benchmarks/ops/run.py has; the graph and recurrent benchmarks are a separate profile marked as needing FLA's pending change", () => {
    for (const name of ["kda-bench", "kda-tests"]) {
      for (const line of commandLines(config.profiles[name])) {
        expect(line).not.toMatch(/benchmark_kda_recurrent/);
        if (!line.includes("benchmarks.ops.run")) continue;
        for (const flag of line.match(/--[a-z-]+/g) ?? [])
          expect(RUN_PY_FLAGS, `${name}: ${flag}`).toContain(flag);
      }
    }
    const flags = commandLines(pending).flatMap((l) => l.match(/--[a-z-]+/g) ?? []);
    expect(flags.filter((f) => !RUN_PY_FLAGS.has(f) && f !== "--json").sort()).toEqual(
      ["--graph", "--iterations", "--no-base", "--warmup"].sort(),
    );
    expect(RAW).toMatch(/NEEDS FLA'S PENDING ASCEND CI CHANGE[^\n]*\n( *#[^\n]*\n)* {2}kda-graph-recurrent:/);
    expect(pending?.prefix).not.toBe(bench?.prefix);
  });

  it("names no store, so the action uses GitHub's cache and every job of the repository shares it", () => {
    expect(RAW).not.toMatch(/^store:/m);
    const inAction = loadConfig({ file: EXAMPLE, env: { HOME: "/home/ci" }, store: "gha" });
    expect(inAction.store.type).toBe("gha");
  });

  it("passes every check on result files shaped as the benchmarks write them", async () => {
    expect(await failures(goodFiles())).toEqual({});
    expect(await pendingFailures(goodFiles())).toEqual({});
  });

  it("fails when chunk_gdn2 did not run both modes (the workflow's inline assertion)", async () => {
    const files = goodFiles();
    const g = files["benchmark_chunk_gdn2.json"] as ReturnType<typeof ordinary>;
    g.results = g.results.filter((r) => r.mode === "fwd");
    expect(await failures(files)).toEqual({
      "chunk_gdn2 ran fwd and fwdbwd": expect.stringMatching(/missing 1: op=chunk_gdn2 mode=fwdbwd/),
    });
  });

  it("fails a recurrent run whose status is failed (the file is written even then), or that ran fewer than 16 cases", async () => {
    const files = goodFiles();
    const r = recurrent();
    r.status = "failed";
    r.error = { type: "AssertionError", message: "recurrent state: ratio 0.0031 > 0.002" };
    const rows = r.results as Record<string, unknown>[];
    for (const row of rows.slice(9)) delete row.multibuffer_false_correctness;
    files["benchmark_kda_recurrent.json"] = r;
    const failed = await pendingFailures(files);
    expect(Object.keys(failed).sort()).toEqual(
      ["recurrent benchmark passed", "recurrent outputs and final states match the naive reference"].sort(),
    );
    expect(failed["recurrent benchmark passed"]).toMatch(/status=failed \(expected passed\)/);
    expect(failed["recurrent outputs and final states match the naive reference"]).toMatch(
      /record 9 multibuffer_false_correctness=\(missing\)/,
    );
    const short = goodFiles();
    const s = recurrent();
    s.results = (s.results as unknown[]).slice(0, 15);
    short["benchmark_kda_recurrent.json"] = s;
    expect(Object.keys(await pendingFailures(short))).toEqual(["recurrent ran 16 cases"]);
  });

  it("fails a graph smoke whose eager/graph validation did not run", async () => {
    const files = goodFiles();
    const g = graph();
    (g.current.results[0] as { validation: string }).validation = "not-run";
    files["benchmark_kda_graph.json"] = g;
    expect(await pendingFailures(files)).toEqual({
      "eager and graph outputs agreed": expect.stringMatching(
        /record 0 validation=not-run \(expected passed\)/,
      ),
    });
  });

  it("fails when a shape is missing from the chunk_kda benchmark", async () => {
    const files = goodFiles();
    const k = ordinary("chunk_kda");
    k.results = k.results.filter((r) => !(r.T === 8192 && r.mode === "fwd"));
    files["benchmark_chunk_kda.json"] = k;
    expect(await failures(files)).toEqual({
      "chunk_kda covers 6 shapes x fwd/fwdbwd": expect.stringMatching(
        /11 records, expected 12; missing 1: op=chunk_kda mode=fwd/,
      ),
    });
  });
});
