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

const RAW = fs.readFileSync(EXAMPLE, "utf8");
const config = loadConfig({ file: EXAMPLE, env: { HOME: "/home/ci" } });
const bench = config.profiles["kda-bench"];
const pending = config.profiles["kda-graph-recurrent"];

/** What FLA has at the revision the example is pinned to: scripts/fla-facts.mjs's output. */
interface Job {
  runsOn: string | string[];
  container: string | null;
  timeoutMinutes: number | null;
  env: Record<string, string | number>;
  steps: { name: string | null; run: string; env: Record<string, string | number> }[];
}
const FACTS = JSON.parse(fs.readFileSync(path.join(path.dirname(EXAMPLE), "fla-facts.json"), "utf8")) as {
  revision: string;
  date: string;
  ops: string[];
  runFlags: string[];
  modules: string[];
  testFiles: string[];
  workflows: Record<string, Record<string, Job>>;
};
const RUN_PY_FLAGS = new Set(FACTS.runFlags);
/** A workflow's job that runs on Ascend (not its `changes` job). */
function ascendJob(file: string): Job {
  const job = Object.entries(FACTS.workflows[file] ?? {}).find(([id]) => id !== "changes")?.[1];
  if (!job) throw new Error(`fla-facts.json has no Ascend job in ${file}`);
  return job;
}
const one = (v: string | string[]) => (Array.isArray(v) ? v.join(",") : v);
/** A shell command's words, its line continuations (a backslash ending a line) dropped. */
const words = (text: string) => text.split(/\s+/).filter((w) => w && w !== "\\");

/** What a command names in FLA's tree that the pinned revision must have; returns what it lacks. */
function missingAtRevision(line: string): string[] {
  const missing: string[] = [];
  for (const m of line.matchAll(/python -m ([\w.]+)/g))
    if (!FACTS.modules.includes(m[1] as string)) missing.push(`module ${m[1]}`);
  for (const m of line.matchAll(/python (benchmarks\/[\w/]+\.py)/g))
    if (!FACTS.modules.includes((m[1] as string).replace(/\.py$/, "").replaceAll("/", ".")))
      missing.push(`file ${m[1]}`);
  for (const m of line.matchAll(/--op (\w+)/g))
    if (!FACTS.ops.includes(m[1] as string)) missing.push(`op ${m[1]}`);
  if (line.includes("benchmarks.ops.run"))
    for (const f of line.match(/--[a-z-]+/g) ?? []) if (!RUN_PY_FLAGS.has(f)) missing.push(`run.py ${f}`);
  if (line.startsWith("pytest"))
    for (const t of words(line).filter((w) => w.startsWith("tests/")))
      if (!FACTS.testFiles.some((f) => f === t || f.startsWith(`${t}/`))) missing.push(`tests ${t}`);
  return missing;
}

/** Every command line of a profile, parallel groups' included. */
function commandLines(profile: typeof bench): string[] {
  return (profile?.commands ?? []).flatMap((c) => ("parallel" in c ? c.parallel.map((p) => p.run) : [c.run]));
}

/** Runs every check of `profile` on `files`; returns failed check name -> message. */
async function failures(files: Files, profile = bench, count = 5): Promise<Record<string, string>> {
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
  it("is pinned to the FLA revision its facts were read from, named with its date in the file, the README and docs/ascend.md", () => {
    expect(FACTS.revision).toMatch(/^[0-9a-f]{40}$/);
    const pin = `${FACTS.revision.slice(0, 8)} (${FACTS.date})`;
    expect(RAW).toContain(`as FLA runs it at ${pin}`);
    const readme = fs.readFileSync(path.join(path.dirname(EXAMPLE), "README.md"), "utf8");
    expect(readme).toContain(pin);
    expect(fs.readFileSync(path.resolve(EXAMPLE, "../../../docs/ascend.md"), "utf8")).toContain(pin);
  });

  it("is what docs/github-actions.md puts in place of FLA's benchmark step, named as at that revision", () => {
    const step = ascendJob("ascend-a2-benchmark-ci.yml").steps.find((st) =>
      st.run.includes("benchmarks.ops.run"),
    );
    const doc = fs.readFileSync(path.resolve(EXAMPLE, "../../../docs/github-actions.md"), "utf8");
    const section = doc.slice(0, doc.indexOf("\n## ", doc.indexOf("## One step")));
    // The step the page quotes and the one its diff takes out: FLA's, at the revision kda-bench reproduces.
    const quoted = /the step `([^`]+)`/.exec(section.replace(/\s*\n\s*/g, " "))?.[1];
    const removed = [...section.matchAll(/^- +- name: (.+)$/gm)].map((m) => m[1]);
    expect(quoted).toBe(step?.name);
    expect(removed).toEqual([step?.name]);
    expect(section).toContain(`${FACTS.revision.slice(0, 8)} (${FACTS.date})`);
  });

  it("runs FLA's benchmark job as its workflow does at that revision: runner, container, cards 0-3, one benchmark per card, its settings", () => {
    const job = ascendJob("ascend-a2-benchmark-ci.yml");
    const step = job.steps.find((st) => st.run.includes("benchmarks.ops.run"));
    if (!step) throw new Error("no benchmark step in the facts");
    expect(bench?.source).toEqual(["/usr/local/Ascend/ascend-toolkit/set_env.sh"]);
    expect(step.run).toContain("source /usr/local/Ascend/ascend-toolkit/set_env.sh");
    const [group] = bench?.commands ?? [];
    if (!group || !("parallel" in group)) throw new Error("kda-bench runs one device group");
    // The workflow's background commands, card by card: the same command on the same card.
    const background = [...step.run.matchAll(/ASCEND_RT_VISIBLE_DEVICES=(\d) (python [^>]*?)\s*>/gs)].map(
      (m) => ({
        card: m[1],
        run: words(m[2] as string).join(" "),
      }),
    );
    expect(background.length).toBe(group.parallel.length);
    group.parallel.forEach((c, i) => {
      expect(group.devices?.[i]).toBe(background[i]?.card);
      expect(words(c.run).join(" ")).toBe(background[i]?.run);
    });
    expect(bench?.env).toMatchObject({ ...step.env, ...job.env, FLA_CI_ENV: String(job.env.FLA_CI_ENV) });
    expect(bench?.github?.["runs-on"]).toBe(one(job.runsOn));
    expect(bench?.github?.container).toEqual({ image: job.container, options: "--shm-size 16g" });
    expect(bench?.github?.["timeout-minutes"]).toBe(job.timeoutMinutes);
    expect(config.key.prefix).toBe("fla-ascend-bench");
  });

  it("runs FLA's 8-card test job at that revision as its second profile: pytest -n 8 --dist load over cards 0-7, its own prefix, saved only after the pytest step", () => {
    const job = ascendJob("ascend-a2-ci.yml");
    const pytest = job.steps.filter((st) => st.run.includes("pytest"));
    const tests = config.profiles["kda-tests"];
    const lines = commandLines(tests);
    expect(lines).toHaveLength(pytest.length);
    pytest.forEach((st, i) => {
      const cmd = words(st.run.slice(st.run.indexOf("pytest"))).join(" ");
      expect(words(lines[i] as string).join(" ")).toBe(cmd);
      expect(cmd).toMatch(/-n 8 --dist load/);
      const c = tests?.commands[i];
      expect(c && "env" in c ? c.env : {}).toMatchObject(
        Object.fromEntries(Object.entries(st.env).map(([k, v]) => [k, String(v)])),
      );
    });
    expect(tests?.env).toMatchObject({ ASCEND_RT_VISIBLE_DEVICES: "0,1,2,3,4,5,6,7", FLA_CI_ENV: "1" });
    expect(job.env.ASCEND_RT_VISIBLE_DEVICES).toBe("0,1,2,3,4,5,6,7");
    expect(tests?.github?.["runs-on"]).toBe(one(job.runsOn));
    expect(tests?.github?.container).toEqual({ image: job.container, options: "--shm-size 16g" });
    expect(tests?.github?.style).toBe("steps");
    expect(tests?.prefix).toBe("fla-ascend-tests");
    expect(tests?.prefix).not.toBe(config.key.prefix);
  });

  it("names only ops, flags, modules and test paths FLA has at that revision; the graph and recurrent profile is marked as needing a later one", () => {
    for (const name of ["kda-bench", "kda-tests"])
      for (const line of commandLines(config.profiles[name]))
        expect(missingAtRevision(line), `${name}: ${line}`).toEqual([]);
    const lacking = commandLines(pending).flatMap(missingAtRevision);
    expect(lacking).toEqual(
      expect.arrayContaining([
        "run.py --graph",
        "run.py --no-base",
        "module benchmarks.ops.benchmark_kda_recurrent",
      ]),
    );
    expect(RAW).toMatch(
      new RegExp(
        `NOT IN FLA AT ${FACTS.revision.slice(0, 8)}[^\\n]*\\n( *#[^\\n]*\\n)* {2}kda-graph-recurrent:`,
      ),
    );
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
