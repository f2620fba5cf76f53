import fs from "node:fs";
import path from "node:path";
import { NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const EXAMPLE = path.resolve(import.meta.dirname, "../../examples/fla-kda/kcache.yml");

/** FLA's benchmark step as named at the revision examples/fla-kda is pinned to: the step kda-bench replaces. */
const BENCHMARK_STEP = (
  JSON.parse(fs.readFileSync(path.join(path.dirname(EXAMPLE), "fla-facts.json"), "utf8")) as {
    workflows: Record<string, Record<string, { steps: { name: string | null; run: string }[] }>>;
  }
).workflows["ascend-a2-benchmark-ci.yml"]?.["benchmark-a2-npu-pytorch-2-7"]?.steps.find((s) =>
  s.run.includes("benchmarks.ops.run"),
)?.name as string;

/**
 * The shape of flash-linear-attention's .github/workflows/ascend-a2-benchmark-ci.yml (read on
 * 2026-12-01), rebuilt here: a `changes` job, `paths:` filters, pull_request types, a matrix,
 * concurrency, a 150-minute timeout, a container with its own env, environment-info steps, the
 * benchmark step (named as at the pinned revision: a later one's also ran chunk_gdn2, which
 * kda-bench does not), and an artifact upload that runs always.
 */
function flaBenchmarkWorkflow() {
  const paths = ["**/*.py", "pyproject.toml", ".github/workflows/*.yml"];
  return {
    name: "ascend-a2-benchmark-ci",
    on: {
      workflow_dispatch: null,
      push: { branches: ["main"], paths },
      pull_request: { branches: ["main"], types: ["opened", "synchronize", "reopened", "edited"], paths },
    },
    jobs: {
      changes: {
        name: "Detect NPU-related changes",
        "runs-on": "ubuntu-latest",
        "timeout-minutes": 5,
        outputs: { npu_related: "${{ steps.detect.outputs.npu_related }}" },
        steps: [
          {
            name: "Detect NPU-related diff",
            id: "detect",
            uses: "actions/github-script@v9.0.0",
            with: { script: "core.setOutput('npu_related', 'false');" },
          },
        ],
      },
      "benchmark-a2-npu-pytorch-2-9": {
        name: "Benchmark A2 NPU (PyTorch 2.9.0)",
        needs: "changes",
        if: "github.event_name == 'push' || needs.changes.outputs.npu_related == 'true'",
        strategy: { "fail-fast": false, matrix: { python: ["3.12"], os: ["linux-aarch64-a2-4"] } },
        "runs-on": "${{ matrix.os }}",
        "timeout-minutes": 150,
        concurrency: {
          group: "${{ github.workflow }}-${{ github.ref }}-${{ matrix.os }}-${{ matrix.python }}",
          "cancel-in-progress": "${{ github.ref != 'refs/heads/main' }}",
        },
        container: {
          image: "ascendai/cann:9.1.0-910b-ubuntu22.04-py3.12",
          options: "--shm-size 16g",
          env: { HF_ENDPOINT: "https://hf-mirror.com" },
        },
        env: { FLA_CI_ENV: 1, ASCEND_RT_VISIBLE_DEVICES: "0,1,2,3", MPLBACKEND: "Agg" },
        steps: [
          { name: "Checkout", uses: "actions/checkout@v7.0.0" },
          { name: "Check NPU and CANN info", run: "npu-smi info" },
          { name: "Install dependencies", run: 'python -m pip install ".[npu,test]"' },
          { name: "Verify environment", shell: "bash", run: "python -c 'import torch_npu'" },
          {
            name: BENCHMARK_STEP,
            shell: "bash",
            env: { FLA_BENCH_WARMUP_MS: "25" },
            run: "python -m benchmarks.ops.run --op chunk_kda --base '' --json benchmark_chunk_kda.json",
          },
          {
            name: "Upload benchmark results",
            if: "always()",
            uses: "actions/upload-artifact@v7.0.1",
            with: { name: "ascend-a2-benchmark-results", path: "benchmark_chunk_kda.json" },
          },
        ],
      },
    },
  };
}

function parserErrors(content: string): string[] {
  const result = parseWorkflow({ name: "ascend-a2-benchmark-ci.yml", content }, new NoOperationTraceWriter());
  return result.context.errors.getErrors().map((e) => e.message);
}

describe("kcache workflow --step", () => {
  it("prints the one step that replaces FLA's benchmark step; the workflow keeps everything else and GitHub's parser accepts it", async () => {
    const r = await runCli(["workflow", "--step", "-p", "kda-bench", "-c", EXAMPLE], {
      env: { ...process.env, HOME: tempDir("step-home") },
      cwd: path.dirname(EXAMPLE),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^# Replaces the step that runs kda-bench's commands/);
    expect(r.stdout).toMatch(/Permissions: none beyond `contents: read`/);
    const printed = parse(r.stdout) as Record<string, unknown>[];
    expect(printed).toEqual([
      {
        name: "kcache run kda-bench",
        id: "kcache",
        uses: "kcache/kcache@v0",
        with: { mode: "run", profile: "kda-bench", config: "kcache.yml" },
      },
    ]);

    const workflow = flaBenchmarkWorkflow();
    expect(parserErrors(stringify(workflow))).toEqual([]);
    const job = workflow.jobs["benchmark-a2-npu-pytorch-2-9"];
    const at = job.steps.findIndex((s) => s.name?.startsWith("Benchmark "));
    const before = structuredClone(workflow);
    job.steps.splice(at, 1, ...(printed as typeof job.steps));
    const edited = stringify(workflow);
    expect(parserErrors(edited)).toEqual([]);
    // Only the benchmark step changed: triggers, filters, the changes job, concurrency, the timeout,
    // the container's env and the artifact upload are the maintainer's, untouched.
    const reread = parse(edited) as ReturnType<typeof flaBenchmarkWorkflow>;
    expect(reread.on).toEqual(before.on);
    expect(reread.jobs.changes).toEqual(before.jobs.changes);
    const { steps: newSteps, ...rest } = reread.jobs["benchmark-a2-npu-pytorch-2-9"];
    const { steps: oldSteps, ...restBefore } = before.jobs["benchmark-a2-npu-pytorch-2-9"];
    expect(rest).toEqual(restBefore);
    expect(newSteps.map((s) => s.name)).toEqual(
      oldSteps.map((s) => (s.name.startsWith("Benchmark ") ? "kcache run kda-bench" : s.name)),
    );
    expect(newSteps.at(-1)).toEqual(oldSteps.at(-1));
  });

  it("names the profiles there are when the profile is unknown (exit 2)", async () => {
    const r = await runCli(["workflow", "--step", "-p", "nope", "-c", EXAMPLE], {
      env: { ...process.env, HOME: tempDir("step-home") },
      cwd: path.dirname(EXAMPLE),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no profile "nope"; profiles: kda-bench, kda-graph-recurrent, kda-tests/);
  });
});

describe("the release workflow", () => {
  it("parses, runs only on v0.x.y tags, publishes with provenance and moves v0 after the release", () => {
    const file = path.resolve(import.meta.dirname, "../../.github/workflows/release.yml");
    const content = fs.readFileSync(file, "utf8");
    expect(parserErrors(content)).toEqual([]);
    const wf = parse(content) as {
      on: { push: { tags: string[] } };
      jobs: { release: { permissions: Record<string, string>; steps: { run?: string }[] } };
    };
    expect(wf.on.push.tags).toEqual(["v0.*.*"]);
    expect(wf.jobs.release.permissions).toEqual({ contents: "write", "id-token": "write" });
    const runs = wf.jobs.release.steps.map((s) => s.run ?? "");
    const at = (re: RegExp) => runs.findIndex((r) => re.test(r));
    expect(at(/npm publish --provenance/)).toBeGreaterThan(at(/^npm test$/));
    expect(at(/git tag -f v0/)).toBeGreaterThan(at(/gh release create/));
    expect(at(/gh release create/)).toBeGreaterThan(at(/npm publish/));
  });

  it("builds the single executable and its wheel on a runner of each architecture, tests them, and attaches them with their SBOMs", () => {
    const file = path.resolve(import.meta.dirname, "../../.github/workflows/release.yml");
    const wf = parse(fs.readFileSync(file, "utf8")) as {
      jobs: {
        executables: {
          strategy: { matrix: { include: { arch: string; runner: string }[] } };
          steps: { run?: string; uses?: string; with?: { path?: string }; env?: Record<string, string> }[];
        };
        release: { needs: string; steps: { run?: string; uses?: string }[] };
      };
    };
    const { executables, release } = wf.jobs;
    expect(executables.strategy.matrix.include).toEqual([
      { arch: "x64", runner: "ubuntu-24.04" },
      { arch: "arm64", runner: "ubuntu-24.04-arm" },
    ]);
    const runs = executables.steps.map((s) => s.run ?? "");
    const at = (re: RegExp) => runs.findIndex((r) => re.test(r));
    expect(at(/npm run build:sea && npm run build:wheel/)).toBeGreaterThan(at(/^npm ci$/));
    expect(at(/vitest run test\/cli\/single-executable\.test\.ts/)).toBeGreaterThan(at(/build:sea/));
    const upload = executables.steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"));
    for (const f of ["kcache-linux-${{ matrix.arch }}", ".cdx.json", ".licenses.txt", "kcache-*.whl"])
      expect(upload?.with?.path).toContain(f);
    expect(release.needs).toBe("executables");
    const releaseRuns = release.steps.map((s) => s.run ?? "");
    const create = releaseRuns.find((r) => r.includes("gh release create")) ?? "";
    expect(create).toContain("assets/*");
    expect(releaseRuns.some((r) => /cp kcache-\*\.tgz assets\/ && cd assets && sha256sum/.test(r))).toBe(
      true,
    );
  });
});
