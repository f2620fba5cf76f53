import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../src/pipeline/run-profile.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const sha = (runner: string) => createHash("sha1").update(runner).digest("hex");

/** A benchmark whose timings come from $SLOW_A (op a's factor): a regression can be planted. */
function project() {
  const dir = tempDir("kcache-baseline");
  const bench = `python3 -c 'import json, os; f = float(os.environ.get("SLOW_A", "1")); json.dump({"results": [{"op": "a", "median_ms": 1.0 * f}, {"op": "b", "median_ms": 2.0}]}, open("r.json", "w"))'`;
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: dir",
      "    path: ${CACHE_ROOT}",
      `store:\n  path: ${path.join(dir, "store")}`,
      "key:\n  prefix: bench",
      "profiles:",
      "  bench:",
      "    commands:",
      "      - name: bench",
      `        run: ${JSON.stringify(bench)}`,
      "    checks:",
      "      - name: no slower than main",
      "        type: threshold",
      "        file: r.json",
      "        key: [op]",
      "        field: median_ms",
      '        "<=": 1.10',
      "        baseline: history",
      "        history-runs: 3",
      "",
    ].join("\n"),
  );
  const run = async (runner: string, slow: string, ref = "refs/heads/main") => {
    const r = await runCli(["run", "--profile", "bench", "--json"], {
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        CACHE_ROOT: path.join(dir, runner),
        KCACHE_STATE_DIR: path.join(dir, runner, ".state"),
        GITHUB_ACTIONS: "true",
        GITHUB_REF: ref,
        GITHUB_EVENT_NAME: ref.startsWith("refs/pull/") ? "pull_request" : "push",
        GITHUB_SHA: sha(runner),
        SLOW_A: slow,
      },
      cwd: dir,
    });
    return { code: r.code, report: JSON.parse(r.stdout) as RunReport };
  };
  return { dir, run };
}

describe("a threshold with baseline: history", () => {
  it("compares a pull request with the median of main's last runs, catches a planted 20% regression, and passes the unchanged records", async () => {
    const p = project();
    const first = await p.run("m1", "1.0");
    expect(first.report.checks[0]?.message).toMatch(/no passing run of branch\/main .* recorded yet/);
    await p.run("m2", "1.04");
    await p.run("m3", "0.96");
    await p.run("m4", "1.0");

    const slow = await p.run("pr-slow", "1.2", "refs/pull/9/merge");
    expect(slow.code).toBe(6);
    const check = slow.report.checks[0];
    expect(check?.passed).toBe(false);
    expect(check?.message).toMatch(/op=a: median_ms ratio 1\.2 not <= 1\.1/);
    expect(check?.message).not.toMatch(/op=b/);
    expect(check?.message).toMatch(/baseline: the median of branch\/main's last 3 runs: /);
    expect(slow.report.save).toBeNull();

    const same = await p.run("pr-same", "1.0", "refs/pull/9/merge");
    expect(same.code).toBe(0);
    expect(same.report.checks[0]?.message).toMatch(/in all 2 records/);

    // A pull request's runs never become main's baseline: a PR that passed with op a 5% slower...
    await p.run("pr-ok", "1.05", "refs/pull/10/merge");
    // ...is not among the runs main compares with.
    const main = await p.run("m5", "1.0");
    const baselineRuns = main.report.checks[0]?.details?.baselineRuns as string[];
    expect(baselineRuns.map((r) => r.slice(0, 12)).sort()).toEqual(
      ["m2", "m3", "m4"].map((m) => sha(m).slice(0, 12)).sort(),
    );
    const baseline = JSON.parse(
      fs.readFileSync(path.join(main.report.outDir, "baseline-no_slower_than_main.json"), "utf8"),
    ) as { results: { op: string; median_ms: number }[] };
    expect(baseline.results.find((r) => r.op === "a")?.median_ms).toBe(1.0);
  });
});
