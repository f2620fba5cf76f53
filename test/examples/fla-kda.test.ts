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
  return {
    "benchmark_chunk_gdn.json": ordinary("chunk_gdn"),
    "benchmark_chunk_kda.json": ordinary("chunk_kda"),
    "benchmark_fused_attnres.json": ordinary("fused_attnres"),
    "benchmark_kda_graph.json": graph(),
    "benchmark_kda_recurrent.json": recurrent(),
  };
}

const config = loadConfig({ file: EXAMPLE, env: { HOME: "/home/ci" } });
const bench = config.profiles["kda-bench"];

/** Runs every check of kda-bench on `files`; returns failed check name -> message. */
async function failures(files: Files): Promise<Record<string, string>> {
  const dir = tempDir("fla");
  for (const [f, v] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), JSON.stringify(v, null, 2));
  const results = await Promise.all(
    (bench?.checks ?? []).map((c, i) => runCheck(c, i, dir, {}, path.join(dir, "c.log"))),
  );
  expect(results).toHaveLength(12);
  return Object.fromEntries(results.filter((r) => !r.passed).map((r) => [r.name, r.message]));
}

describe("examples/fla-kda/kcache.yml", () => {
  it("runs the Ascend benchmark job: four benchmarks at once, one NPU each, then the KDA graph and recurrent on card 0", () => {
    expect(bench?.source).toEqual(["/usr/local/Ascend/ascend-toolkit/set_env.sh"]);
    const [group, graphCmd, recurrentCmd] = bench?.commands ?? [];
    expect(group && "parallel" in group && group.parallel.map((c) => c.name)).toEqual([
      "chunk_gdn",
      "chunk_kda",
      "fused_attnres",
      "conv1d",
    ]);
    expect(group && "parallel" in group && group.devices).toEqual(["0", "1", "2", "3"]);
    expect(graphCmd && "run" in graphCmd && graphCmd.devices).toEqual(["0"]);
    expect(recurrentCmd && "run" in recurrentCmd && recurrentCmd.env).toEqual({ FLA_CI_ENV: "0" });
    expect(bench?.env).toMatchObject({
      FLA_BENCH_WARMUP_MS: "25",
      FLA_BENCH_REP_MS: "100",
      FLA_BENCH_OP_WARMUP_ITERS: "3",
      ASCEND_RT_VISIBLE_DEVICES: "0,1,2,3,4,5,6,7",
    });
    expect(bench?.github?.container).toEqual({
      image: "ascendai/cann:9.0.0-910b-ubuntu22.04-py3.11",
      options: "--shm-size 16g",
    });
    expect(config.key.prefix).toBe("fla-ascend-bench");
    expect(config.profiles["kda-tests"]?.env).toMatchObject({ FLA_NPU_XDIST: "1" });
  });

  it("passes every check on result files shaped as the benchmarks write them", async () => {
    expect(await failures(goodFiles())).toEqual({});
  });

  it("fails a recurrent run whose status is failed (the file is written even then)", async () => {
    const files = goodFiles();
    const r = recurrent();
    r.status = "failed";
    r.error = { type: "AssertionError", message: "recurrent state: ratio 0.0031 > 0.002" };
    const rows = r.results as Record<string, unknown>[];
    for (const row of rows.slice(9)) {
      delete row.multibuffer_false_correctness;
      delete row.baseline_median_ms;
      delete row.candidate_median_ms;
    }
    files["benchmark_kda_recurrent.json"] = r;
    const failed = await failures(files);
    expect(Object.keys(failed).sort()).toEqual(
      [
        "recurrent benchmark passed",
        "recurrent outputs and final states match the naive reference",
        "recurrent medians are real",
      ].sort(),
    );
    expect(failed["recurrent benchmark passed"]).toMatch(/status=failed \(expected passed\)/);
    expect(failed["recurrent outputs and final states match the naive reference"]).toMatch(
      /record 9 multibuffer_false_correctness=\(missing\)/,
    );
  });

  it("fails a graph smoke whose eager/graph validation did not run", async () => {
    const files = goodFiles();
    const g = graph();
    (g.current.results[0] as { validation: string }).validation = "not-run";
    files["benchmark_kda_graph.json"] = g;
    expect(await failures(files)).toEqual({
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

  it("fails when the graph smoke wrote no record, or a timing that is not a real one", async () => {
    const files = goodFiles();
    const g = graph();
    (g.current.results[0] as { graph: { p50_ms: number } }).graph.p50_ms = 0;
    files["benchmark_kda_graph.json"] = g;
    expect(Object.keys(await failures(files))).toEqual(["eager and graph timings are real"]);
    const empty = goodFiles();
    empty["benchmark_kda_graph.json"] = { current: { machine_info: MACHINE, results: [] }, baseline: null };
    expect(Object.keys(await failures(empty)).sort()).toEqual(
      [
        "eager and graph outputs agreed",
        "eager and graph timings are real",
        "graph smoke ran chunk_kda fwdbwd on the smoke shape",
      ].sort(),
    );
  });
});
