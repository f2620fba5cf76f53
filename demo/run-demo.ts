/**
 * `npm run demo`: the main job on the embedded local store, cold then warm, on a simulated Triton;
 * then the same on a simulated Triton-Ascend 3.2 through `kcache run` (`npm run demo -- --ascend`
 * runs only that part); then run history: ten runs on main and a pull request with a planted 20%
 * regression, `kcache stats`, and a `baseline: history` check that catches it (`-- --history`).
 *
 * demo/sim is a stand-in for Triton 3.6 and Triton-Ascend (it compiles nothing; it writes what they
 * write, where they write it, and looks kernels up as they do, sleeping per compile). The same
 * commands work around a real Triton job: see the README.
 */
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { makeFakeAscend } from "./sim/ascend-toolkit.js";
import { installPackages } from "./sim/installed-packages.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "bin", "kcache.js");
const SIM = path.join(ROOT, "demo", "sim");
const HOOK = path.join(ROOT, "python", "kcache_hook");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-demo-"));
const REVISION = "d".repeat(40);

const env: NodeJS.ProcessEnv = {
  ...process.env,
  KCACHE_STORE: path.join(work, "store"),
  KCACHE_STATE_DIR: path.join(work, "state"),
  TRITON_SIM_COMPILE_MS: process.env.TRITON_SIM_COMPILE_MS ?? "250",
  // The job's installed stack, as kcache's probe sees it after an install step.
  PYTHONPATH: installPackages(path.join(work, "site-packages"), {
    torch: "2.11.0+kcache.sim",
    triton: "3.6.0+kcache.sim",
  }),
};
delete env.GITHUB_ACTIONS;
delete env.GITHUB_REF;
delete env.GITHUB_SHA;
// The demo plays a developer's own machine (no CI): run inside a CI job, that job's variables would
// make its simulated runners untrusted builds of an unknown CI (docs/other-ci.md).
for (const name of ["CI", "CONTINUOUS_INTEGRATION", "BUILD_ID", "BUILD_NUMBER", "RUN_ID", "CI_NAME"])
  delete env[name];
for (const name of Object.keys(env))
  if (/^(GITLAB_CI|BUILDKITE|JENKINS_|CI_|CHANGE_)/.test(name)) delete env[name];

fs.writeFileSync(
  path.join(work, "kcache.yml"),
  [
    "caches:",
    "  - name: triton",
    "    kind: triton",
    "    path: ${TRITON_CACHE_DIR}",
    "key:",
    "  prefix: demo-bench",
    "",
  ].join("\n"),
);

/**
 * The main job's CI variables: its runs are main's, so the stats page at the end (main's runs) shows
 * them beside the history's.
 */
const MAIN = {
  GITHUB_ACTIONS: "true",
  GITHUB_REF: "refs/heads/main",
  GITHUB_EVENT_NAME: "push",
  GITHUB_SHA: REVISION,
};

function kcache(args: string[], cacheDir: string): void {
  const r = spawnSync(process.execPath, [BIN, ...args, "--revision", REVISION], {
    cwd: work,
    env: { ...env, ...MAIN, TRITON_CACHE_DIR: cacheDir },
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (r.status !== 0) throw new Error(`kcache ${args.join(" ")} exited ${r.status}`);
}

interface Run {
  compiled: number;
  loaded: number;
  seconds: number;
}

/**
 * The workload; `hooked`: with kcache's hook in, as a job between `kcache restore` and `kcache save`
 * has it (the action's restore step installs it), writing to the file the restore made, so the save's
 * run record counts the kernels the workload loaded and compiled.
 */
function workload(cacheDir: string, hooked = false): Run {
  const hook = hooked
    ? { PYTHONPATH: `${HOOK}${path.delimiter}${SIM}`, KCACHE_TELEMETRY_FILE: newestTelemetryFile() }
    : { PYTHONPATH: SIM };
  const out = execFileSync("python3", [path.join(SIM, "workload.py"), "12", "4"], {
    env: { ...env, ...hook, TRITON_CACHE_DIR: cacheDir },
  }).toString();
  return JSON.parse(out.trim().split("\n").pop() as string) as Run;
}

/** The telemetry file the last `kcache restore` made for the job, in the state folder. */
function newestTelemetryFile(): string {
  const dir = env.KCACHE_STATE_DIR as string;
  const files = (fs.readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => f.endsWith("-telemetry.jsonl"))
    .map((f) => path.join(dir, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (!files[0]) throw new Error(`kcache restore made no telemetry file in ${dir}`);
  return files[0];
}

function timed<T>(fn: () => T): [T, number] {
  const t0 = performance.now();
  const v = fn();
  return [v, (performance.now() - t0) / 1000];
}

try {
  execFileSync("python3", ["--version"], { stdio: "ignore" });
} catch {
  console.error(
    "kcache demo: python3 is needed to run the simulated Triton workload; install it and run again",
  );
  process.exit(2);
}

const ascendOnly = process.argv.includes("--ascend");
const historyOnly = process.argv.includes("--history");
console.log(
  `kcache demo in ${work}\n(simulated Triton: each compile sleeps ${env.TRITON_SIM_COMPILE_MS} ms)\n`,
);
if (!ascendOnly && !historyOnly) nvidiaDemo();
if (!historyOnly) ascendDemo();
if (!ascendOnly) historyDemo();
if (!process.env.KCACHE_DEMO_KEEP) fs.rmSync(work, { recursive: true, force: true });

function nvidiaDemo(): void {
  const runnerA = path.join(work, "runner-a", "_work", "triton-cache");
  const runnerB = path.join(work, "runner-b", "home", "ci", ".triton", "cache");

  console.log("== run 1 on runner A: cold ==");
  const [, restoreA] = timed(() => kcache(["restore"], runnerA));
  const cold = workload(runnerA, true);
  console.log(
    `workload: ${cold.compiled} kernels compiled, ${cold.loaded} loaded, ${cold.seconds.toFixed(2)} s`,
  );
  const [, saveA] = timed(() => kcache(["save"], runnerA));

  console.log("\n== run 2 on runner B, a different cache path: warm through kcache ==");
  const [, restoreB] = timed(() => kcache(["restore"], runnerB));
  const warm = workload(runnerB, true);
  console.log(
    `workload: ${warm.compiled} kernels compiled, ${warm.loaded} loaded, ${warm.seconds.toFixed(2)} s`,
  );
  const [, saveB] = timed(() => kcache(["save"], runnerB));

  console.log("\n== for contrast: runner A's cache bytes moved to runner C's path without kcache ==");
  const runnerC = path.join(work, "runner-c", "triton-cache");
  fs.mkdirSync(path.dirname(runnerC), { recursive: true });
  fs.renameSync(runnerA, runnerC);
  const moved = workload(runnerC);
  console.log(
    `workload: ${moved.compiled} kernels compiled, ${moved.loaded} loaded, ${moved.seconds.toFixed(2)} s`,
  );

  const row = (name: string, r: Run, overhead: string) =>
    `| ${name.padEnd(38)} | ${String(r.compiled).padStart(8)} | ${String(r.loaded).padStart(6)} | ${r.seconds.toFixed(2).padStart(10)} | ${overhead.padStart(21)} |`;
  console.log(`
| run                                    | compiled | loaded | workload s | kcache restore+save s |
|----------------------------------------|----------|--------|------------|-----------------------|
${row("cold (runner A)", cold, `${(restoreA + saveA).toFixed(2)}`)}
${row("warm via kcache (runner B, other path)", warm, `${(restoreB + saveB).toFixed(2)}`)}
${row("moved bytes, no kcache (runner C)", moved, "-")}

Warm run: ${warm.compiled} of ${warm.compiled + warm.loaded} kernels compiled, ${(cold.seconds - warm.seconds).toFixed(2)} s of compiling saved (${((1 - warm.seconds / cold.seconds) * 100).toFixed(0)}%).
Moving the bytes alone recompiled ${moved.compiled}: Triton's group files hold absolute paths, which kcache rewrites on restore.
`);
  if (warm.compiled !== 0) {
    console.error("kcache demo: the warm run compiled kernels; this is a bug");
    process.exitCode = 1;
  }
}

/**
 * Triton-Ascend's 3.2 line, as flash-linear-attention's Ascend CI pins it: no compilation listener,
 * so `kcache run` counts compiles from the cache folder; the profile sources CANN's set_env.sh; the
 * second runner has another cache path and freshly installed headers.
 */
function ascendDemo(): void {
  console.log("\n== Triton-Ascend 3.2 (simulated), through kcache run ==");
  const ascend = makeFakeAscend(path.join(work, "Ascend"));
  const dir = path.join(work, "ascend");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      "    path: ${TRITON_CACHE_DIR}",
      "key:",
      "  prefix: demo-ascend",
      "profiles:",
      "  npu-bench:",
      `    source: ${ascend.setEnv}`,
      "    expect: warm",
      "    env:",
      `      PYTHONPATH: ${SIM}`,
      "      TRITON_SIM_BACKEND: ascend",
      '      TRITON_SIM_LINE: "3.2"',
      "    commands:",
      "      - name: benchmarks",
      "        devices: [0, 1]",
      "        parallel:",
      `          - { name: chunk_gdn, run: python3 ${SIM}/workload.py 6 2 --prefix chunk_gdn }`,
      `          - { name: chunk_kda, run: python3 ${SIM}/workload.py 6 2 --prefix chunk_kda }`,
      "",
    ].join("\n"),
  );
  const run = (label: string, cacheDir: string) => {
    const r = spawnSync(
      process.execPath,
      [BIN, "run", "--profile", "npu-bench", "--revision", REVISION, "--out", path.join(dir, `out-${label}`)],
      {
        cwd: dir,
        env: {
          ...env,
          PYTHONPATH: installPackages(path.join(dir, "site-packages"), {
            torch: "2.6.0+kcache.sim",
            torch_npu: "2.6.0+kcache.sim",
            triton_ascend: "3.2.0+kcache.sim",
          }),
          TRITON_CACHE_DIR: cacheDir,
          KCACHE_STATE_DIR: path.join(dir, `state-${label}`),
        },
      },
    );
    if (r.status !== 0) throw new Error(`kcache run (${label}) exited ${r.status}: ${r.stderr}`);
    return JSON.parse(fs.readFileSync(path.join(dir, `out-${label}`, "kcache-report.json"), "utf8")) as {
      seconds: number;
      kernels: { source: string; compiled: number };
      restore: { cacheHit: boolean } | null;
      save: { outcome: string } | null;
    };
  };
  const cold = run("cold", path.join(work, "npu-runner-a", "triton-cache"));
  console.log(
    `cold on runner A: ${cold.kernels.compiled} kernels compiled (counted from the cache folder: ${cold.kernels.source}), ${cold.seconds.toFixed(2)} s, save: ${cold.save?.outcome}`,
  );
  ascend.reinstallHeaders();
  const warm = run("warm", path.join(work, "npu-runner-b", "home", ".triton", "cache"));
  console.log(
    `warm on runner B (another path, headers reinstalled): exact hit ${warm.restore?.cacheHit}, ${warm.kernels.compiled} kernels compiled, ${warm.seconds.toFixed(2)} s`,
  );
  console.log(
    "precompiled.h.gch is never saved: clang refuses one whose headers changed, and Triton-Ascend rebuilds it once from the restored precompiled.h.",
  );
  if (warm.kernels.compiled !== 0 || !warm.restore?.cacheHit) {
    console.error("kcache demo: the warm Triton-Ascend run compiled kernels; this is a bug");
    process.exitCode = 1;
  }
}

/**
 * Run history: each `kcache run` leaves a record in the store. Ten runs on main (timings with a
 * little noise), then a pull request whose op "chunk_kda" is 20% slower: its `baseline: history`
 * check (the median of main's last five runs) fails, naming those runs; `kcache stats` sums main's.
 * The bench uses its one kernel as a cache does: it reads the restored one, or writes it when absent,
 * so every run's working set is that kernel, whatever the clock or the filesystem's atime rules.
 */
function historyDemo(): void {
  console.log("\n== run history: ten runs on main, a pull request 20% slower ==");
  const dir = path.join(work, "history");
  fs.mkdirSync(dir, { recursive: true });
  const bench = `python3 -c 'import json, os; f = float(os.environ["SLOW"]); json.dump({"results": [{"op": "chunk_kda", "median_ms": 2.0 * f}, {"op": "chunk_gdn", "median_ms": 1.5}]}, open("r.json", "w"))' && { cat "$CACHE_ROOT/kernels.bin" || echo kernels > "$CACHE_ROOT/kernels.bin"; } >/dev/null 2>&1`;
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: dir",
      "    path: ${CACHE_ROOT:-cache}",
      "key:",
      "  prefix: demo-history",
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
      "    compare:",
      "      file: r.json",
      "      key: [op]",
      "",
    ].join("\n"),
  );
  const run = (i: number, slow: number, ref = "refs/heads/main") => {
    const runner = path.join(dir, `runner-${i}`);
    return spawnSync(
      process.execPath,
      [BIN, "run", "--profile", "bench", "--json", "--out", path.join(runner, "out")],
      {
        cwd: dir,
        env: {
          ...env,
          CACHE_ROOT: path.join(runner, "cache"),
          KCACHE_STATE_DIR: path.join(runner, "state"),
          GITHUB_ACTIONS: "true",
          GITHUB_REF: ref,
          GITHUB_EVENT_NAME: ref.startsWith("refs/pull/") ? "pull_request" : "push",
          GITHUB_SHA: i.toString(16).padEnd(40, "a"),
          SLOW: String(slow),
        },
      },
    );
  };
  for (let i = 1; i <= 10; i++) run(i, 1 + ((i % 3) - 1) * 0.02);
  const pr = run(11, 1.2, "refs/pull/42/merge");
  const check = (JSON.parse(pr.stdout.toString()) as { checks: { passed: boolean; message: string }[] })
    .checks[0];
  console.log(`pull request 42, chunk_kda 20% slower: exit ${pr.status}; ${check?.message}`);
  const same = run(12, 1.0, "refs/pull/43/merge");
  console.log(`pull request 43, unchanged: exit ${same.status}`);
  // Outside the demo's folder, which is deleted at the end: the page it names stays to be opened.
  const page = path.join(os.tmpdir(), "kcache-demo-stats.html");
  const stats = spawnSync(process.execPath, [BIN, "stats", "--html", page], {
    cwd: dir,
    env: { ...env, GITHUB_ACTIONS: "true", GITHUB_REF: "refs/heads/main" },
  });
  process.stdout.write(stats.stdout.toString() + stats.stderr.toString());
  if (pr.status !== 6 || check?.passed !== false || same.status !== 0) {
    console.error("kcache demo: the history baseline did not catch the planted regression; this is a bug");
    process.exitCode = 1;
  }
}
