import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/load.js";
import { buildJob } from "../../src/job/build-job.js";
import { type Log, silentLog } from "../../src/log.js";
import { runProfile } from "../../src/pipeline/run-profile.js";
import { runMarkdown } from "../../src/report/run-markdown.js";
import { TEST_STACK, tempDir } from "../helpers/sandbox.js";

const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

/** An op package the way FLA lays them out: a kernel module, and Python around it (heuristics). */
function opPackage(dir: string, op: string): void {
  fs.mkdirSync(path.join(dir, "ops", op), { recursive: true });
  fs.writeFileSync(path.join(dir, "ops", "__init__.py"), "");
  fs.writeFileSync(path.join(dir, "ops", op, "__init__.py"), "");
  fs.writeFileSync(path.join(dir, "ops", op, "heuristics.py"), "BLOCKS = [64, 128]\n");
  fs.writeFileSync(
    path.join(dir, "ops", op, "kernels.py"),
    [
      "from triton.autotuner import autotune",
      "",
      `def ${op}_kernel(x):`,
      "    pass",
      "",
      "def run():",
      `    autotune("${op}_kernel", "def ${op}_kernel(x): pass", [{"BLOCK": 64}, {"BLOCK": 128}], ("T", 4096), fn=${op}_kernel)`,
      "",
    ].join("\n"),
  );
}

function git(dir: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir })
    .toString()
    .trim();
}

/** A checkout of a kernel library with two ops, its benchmark profile, and a git history. */
function library() {
  const dir = tempDir("benchlib");
  opPackage(dir, "alpha");
  opPackage(dir, "beta");
  fs.writeFileSync(
    path.join(dir, "bench.py"),
    [
      "import shutil, os",
      "from ops.alpha import kernels as alpha",
      "from ops.beta import kernels as beta",
      "# What FLA's run_benchmark_compare.py does to 'avoid cross-commit contamination':",
      "cache = os.path.join(os.environ['TRITON_CACHE_DIR'], 'cache')",
      "if os.path.exists(cache):",
      "    shutil.rmtree(cache)",
      "    os.makedirs(cache)",
      "alpha.run()",
      "beta.run()",
      "",
    ].join("\n"),
  );
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "base");
  return dir;
}

async function benchRun(dir: string, log: Log = silentLog()) {
  const config = resolveConfig(
    {
      caches: [
        { name: "triton", kind: "triton", path: path.join(dir, ".cache", git(dir, "rev-parse", "HEAD")) },
      ],
      store: { path: path.join(path.dirname(dir), `${path.basename(dir)}-store`) },
      key: { prefix: "lib-bench" },
      profiles: {
        bench: {
          benchmark: true,
          "autotune-env": ["BENCH_REP_MS"],
          "autotune-salt": "package",
          "restore-revisions": ["main"],
          env: { PYTHONPATH: `${SIM}:${dir}`, TRITON_SIM_COMPILE_MS: "2", BENCH_REP_MS: "200" },
          commands: [{ name: "bench", run: "python3 bench.py" }],
        },
      },
    },
    "kcache.yml",
    {},
    dir,
  );
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    KCACHE_STATE_DIR: path.join(dir, ".state"),
    GITHUB_REF: "refs/heads/main",
  };
  const job = await buildJob({
    config,
    overrides: { profile: "bench" },
    log,
    env,
    cwd: dir,
    stack: TEST_STACK,
  });
  return runProfile({ job, outDir: path.join(dir, ".out"), echo: null, record: false });
}

describe("a benchmark profile: pinned winners, salted by their op's package, reported per command", () => {
  it("an edit to an op's Python re-tunes that op's kernels only, and the report says which ran on whose winners", async () => {
    const dir = library();
    const logs: string[] = [];
    const log: Log = { ...silentLog(), warn: (m: string) => logs.push(m) };
    const first = await benchRun(dir, log);
    expect(first.passed).toBe(true);
    expect(first.commands[0]?.autotune).toEqual({
      pinned: [],
      fresh: [
        { kernel: "alpha_kernel", why: expect.stringMatching(/no restored key had it/) },
        { kernel: "beta_kernel", why: expect.stringMatching(/no restored key had it/) },
      ],
    });
    // The script's clear of $TRITON_CACHE_DIR/cache is caught, once, with the fix.
    expect(logs.filter((l) => l.includes("a folder Triton never uses"))).toHaveLength(1);
    expect(logs.join("\n")).toMatch(/Under autotune: pinned both sides run the winners .*: the clear can go/);
    const base = git(dir, "rev-parse", "HEAD");

    // HEAD edits alpha's heuristics (Python outside the @jit function: Triton's key does not see it).
    fs.writeFileSync(path.join(dir, "ops", "alpha", "heuristics.py"), "BLOCKS = [64, 128, 256]\n");
    git(dir, "checkout", "-q", "-b", "head");
    git(dir, "commit", "-q", "-am", "retune alpha");
    const second = await benchRun(dir);
    const a = second.commands[0]?.autotune;
    expect(a?.fresh).toEqual([{ kernel: "alpha_kernel", why: expect.stringMatching(/package changed/) }]);
    expect(a?.pinned).toEqual([
      {
        kernel: "beta_kernel",
        producer: expect.objectContaining({
          profile: "bench",
          benchmark: true,
          revision: base,
          env: { BENCH_REP_MS: "200" },
        }),
        earlierInRun: false,
      },
    ]);
    expect(second.restore?.autotune?.withheld).toEqual([
      expect.objectContaining({ kernel: "alpha_kernel", reason: "changed-salt" }),
    ]);
    expect(runMarkdown(second)).toMatch(
      /bench: 1 kernels on given winners \(bench@[0-9a-f]{12}\), 1 tuned here: a source of its kernel's package changed/,
    );
    // restore-revisions: [main] resolved with git to BASE's commit, whose key the first run saved.
    expect(second.restore?.matchedKey).toMatch(new RegExp(`${base}$`));
  });
});
