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

/** Result files in the layouts the example documents, optionally with one defect each. */
function writeResults(dir: string, defect = false) {
  const ordinary = SHAPES.flatMap(([B, T, H, D]) =>
    ["fwd", "fwdbwd"].map((mode) => ({
      op: "chunk_kda",
      mode,
      B,
      T,
      H,
      D,
      median_ms: 2.5,
      p20_ms: 2.4,
      p80_ms: 2.7,
    })),
  );
  if (defect) ordinary.pop();
  fs.writeFileSync(
    path.join(dir, "kda.json"),
    JSON.stringify({ machine_info: { device: "H200" }, results: ordinary }),
  );
  const stats = { out_sum: 12.5, out_abs_max: 3.25, grad_sum: -4.0 };
  fs.writeFileSync(
    path.join(dir, "graph.json"),
    JSON.stringify({
      results: [
        {
          op: "chunk_kda",
          mode: "fwdbwd",
          shape: "smoke",
          eager: stats,
          graph: defect ? { ...stats, grad_sum: -4.5 } : stats,
        },
      ],
    }),
  );
  const recurrent = Array.from({ length: 16 }, (_, c) =>
    [true, false].map((multibuffer) => ({
      case: c,
      multibuffer,
      out_max_abs_err: 1e-4,
      state_max_abs_err: 2e-4,
      median_ms: 0.8,
    })),
  ).flat();
  if (defect) (recurrent[5] as { state_max_abs_err: number }).state_max_abs_err = 0.3;
  fs.writeFileSync(path.join(dir, "recurrent.json"), JSON.stringify({ results: recurrent }));
}

describe("examples/fla-kda/kcache.yml", () => {
  const config = loadConfig({ file: EXAMPLE, env: { HOME: "/home/ci" } });
  const profile = config.profiles["kda-bench"];

  it("is a valid config with the three KDA commands and their environment", () => {
    expect(profile?.commands.map((c) => c.name)).toEqual(["ordinary", "graph-smoke", "recurrent"]);
    expect(profile?.env).toEqual({
      FLA_BENCH_WARMUP_MS: "25",
      FLA_BENCH_REP_MS: "100",
      FLA_BENCH_OP_WARMUP_ITERS: "3",
      MPLBACKEND: "Agg",
    });
    expect(config.key.prefix).toBe("fla-kda-bench");
  });

  it("passes every check on result files of the documented layouts", async () => {
    const dir = tempDir("fla");
    writeResults(dir);
    const results = await Promise.all(
      (profile?.checks ?? []).map((c, i) => runCheck(c, i, dir, {}, path.join(dir, "c.log"))),
    );
    expect(results.filter((r) => !r.passed).map((r) => r.message)).toEqual([]);
    expect(results).toHaveLength(8);
  });

  it("catches a missing ordinary result, an eager/graph mismatch and a bad final state", async () => {
    const dir = tempDir("fla");
    writeResults(dir, true);
    const results = await Promise.all(
      (profile?.checks ?? []).map((c, i) => runCheck(c, i, dir, {}, path.join(dir, "c.log"))),
    );
    const failed = Object.fromEntries(results.filter((r) => !r.passed).map((r) => [r.name, r.message]));
    expect(Object.keys(failed).sort()).toEqual(
      [
        "eager and graph modes agree",
        "ordinary covers 6 shapes x fwd/fwdbwd",
        "recurrent final states match the naive reference",
      ].sort(),
    );
    expect(failed["ordinary covers 6 shapes x fwd/fwdbwd"]).toMatch(
      /11 records, expected 12; missing 1: op=chunk_kda mode=fwdbwd \(5 of 6\)/,
    );
    expect(failed["eager and graph modes agree"]).toContain("eager.grad_sum=-4 vs graph.grad_sum=-4.5");
    expect(failed["recurrent final states match the naive reference"]).toContain(
      "case=2 multibuffer=false: state_max_abs_err 0.3 not <= 0.005",
    );
  });
});
