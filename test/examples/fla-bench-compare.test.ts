import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const env = { HOME: "/home/ci" };
const load = (file: string) => loadConfig({ file: path.join(ROOT, file), env, cwd: "/repo" });

describe("examples/fla-bench-compare", () => {
  it("runs FLA's comparison unchanged as a benchmark profile: pinned, salted, BASE's key restored, FLA CI's settings", () => {
    const c = load("examples/fla-bench-compare/kcache.yml");
    const p = c.profiles["bench-compare"];
    if (!p) throw new Error("examples/fla-bench-compare/kcache.yml: no bench-compare profile");
    expect(p).toMatchObject({
      benchmark: true,
      autotune: "pinned",
      "autotune-env": ["FLA_BENCH_WARMUP_MS", "FLA_BENCH_REP_MS", "FLA_BENCH_OP_WARMUP_ITERS"],
      "autotune-salt": "package",
      "restore-revisions": ["origin/main"],
      env: {
        FLA_BENCH_WARMUP_MS: "40",
        FLA_BENCH_REP_MS: "200",
        FLA_BENCH_OP_WARMUP_ITERS: "6",
        FLA_BENCH_COOLDOWN_SEC: "3",
      },
    });
    const run = (p.commands[0] as { run: string }).run;
    expect(run).toBe(
      "python scripts/run_benchmark_compare.py --base origin/main --head HEAD --threshold 5.0 --no-fail-on-regression --output benchmark_results.json",
    );
    // The prewarm tunes main's winners as a benchmark with the same settings, under the same prefix.
    const w = c.profiles["bench-prewarm"];
    expect(w).toMatchObject({ benchmark: true, "autotune-env": p["autotune-env"], env: p.env });
    expect(c.caches[0]).toMatchObject({ isolate: true, maxSize: 20_000_000_000 });
  });

  it("the GPU proof runs the same profiles (bench/gpu/fla-compare.yml), naming only its ops", () => {
    const example = load("examples/fla-bench-compare/kcache.yml");
    const device = load("bench/gpu/fla-compare.yml");
    expect(device.caches).toEqual(example.caches);
    expect(device.key).toEqual(example.key);
    for (const name of ["bench-compare", "bench-prewarm"]) {
      const {
        commands: a,
        checks: ca,
        github: _g,
        ...restA
      } = example.profiles[name] as Record<string, unknown>;
      const { commands: b, checks: cb, ...restB } = device.profiles[name] as Record<string, unknown>;
      expect(restB).toEqual(restA);
      expect(cb).toEqual(ca);
      const [ra, rb] = [a, b].map((x) => (x as { run: string }[])[0]?.run ?? "");
      expect(
        rb?.replace(/ --benchmark-ops \$\{FLA_BENCH_OPS\}$/, "").replace("--op ${FLA_BENCH_OPS}", "--op all"),
      ).toBe(ra);
    }
    expect(fs.readFileSync(path.join(ROOT, "examples/fla-bench-compare/README.md"), "utf8")).toMatch(
      /bc3b101d/,
    );
  });
});
