import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/load.js";
import { buildJob } from "../../src/job/build-job.js";
import { silentLog } from "../../src/log.js";
import { runProfile } from "../../src/pipeline/run-profile.js";
import { TEST_STACK, tempDir } from "../helpers/sandbox.js";

const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

/*
 * A HEAD-vs-BASE comparison as FLA's script runs one: one command, two Python processes (the two
 * sides), each autotuning the same two kernels through the simulated Triton's disk cache. Each side
 * writes which of its lookups were served a result from disk (true) and which it tuned (false).
 */
function comparison(policy: "fresh" | "pinned") {
  const dir = tempDir(`sides-${policy}`);
  fs.writeFileSync(
    path.join(dir, "side.py"),
    [
      "import json, sys",
      "from triton.runtime import autotuner",
      "from triton.autotuner import autotune",
      "served = []",
      "check = autotuner.Autotuner.check_disk_cache",
      "def spy(self, *a, **k):",
      "    r = check(self, *a, **k)",
      "    served.append(bool(r))",
      "    return r",
      "autotuner.Autotuner.check_disk_cache = spy",
      "for name in ('alpha_kernel', 'beta_kernel'):",
      "    autotune(name, f'def {name}(x): pass', [{'BLOCK': 64}, {'BLOCK': 128}], ('T', 4096))",
      "with open('sides.jsonl', 'a') as f:",
      "    f.write(json.dumps({'side': sys.argv[1], 'served': served}) + '\\n')",
      "",
    ].join("\n"),
  );
  execFileSync("git", ["init", "-q", "-b", "main"], { cwd: dir });
  const config = resolveConfig(
    {
      caches: [{ name: "triton", kind: "triton", path: path.join(dir, ".cache") }],
      store: { path: path.join(dir, ".store") },
      key: { prefix: "sides" },
      profiles: {
        prewarm: {
          benchmark: true,
          env: { PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "1" },
          commands: [{ name: "tune", run: "python3 side.py prewarm" }],
        },
        compare: {
          benchmark: true,
          autotune: policy,
          env: { PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "1" },
          commands: [{ name: "compare", run: "python3 side.py head && python3 side.py base" }],
        },
      },
    },
    "kcache.yml",
    {},
    dir,
  );
  const run = async (profile: string, revision: string) => {
    fs.rmSync(path.join(dir, "sides.jsonl"), { force: true });
    fs.rmSync(path.join(dir, ".cache"), { recursive: true, force: true }); // a fresh runner each time
    const job = await buildJob({
      config,
      overrides: { profile, revision },
      log: silentLog(),
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        KCACHE_STATE_DIR: path.join(dir, ".state"),
        GITHUB_REF: "refs/heads/main",
      },
      cwd: dir,
      stack: TEST_STACK,
    });
    const report = await runProfile({ job, outDir: path.join(dir, ".out"), echo: null, record: false });
    expect(report.passed).toBe(true);
    return fs
      .readFileSync(path.join(dir, "sides.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { side: string; served: boolean[] });
  };
  return run;
}

describe("autotune policies on both sides of a comparison in one job", () => {
  it("fresh: each side tunes for itself; the other side's winners are never served to it", async () => {
    const run = comparison("fresh");
    expect(await run("prewarm", "1".repeat(40))).toEqual([{ side: "prewarm", served: [false, false] }]);
    // The prewarm saved winners; under fresh the comparison is given none, and BASE's side is not
    // served what HEAD's side tuned a moment before.
    expect(await run("compare", "2".repeat(40))).toEqual([
      { side: "head", served: [false, false] },
      { side: "base", served: [false, false] },
    ]);
  });

  it("pinned: neither side tunes a kernel the job was given a winner for", async () => {
    const run = comparison("pinned");
    await run("prewarm", "1".repeat(40));
    expect(await run("compare", "2".repeat(40))).toEqual([
      { side: "head", served: [true, true] },
      { side: "base", served: [true, true] },
    ]);
  });
});
