import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { decodePlan, type Plan } from "../../src/cache/plan/plan.js";
import type { CpuPrewarmReport } from "../../src/pipeline/cpu-prewarm/cpu-prewarm.js";
import type { RunReport } from "../../src/pipeline/run-report.js";
import { installedStack } from "../fixtures/installed-stack.js";
import { type CliResult, runCli } from "./cli.js";
import { SIM } from "./python-sim.js";
import { tempDir } from "./sandbox.js";

/*
 * A project with Triton kernels in its own package (lib/ops.py) run through the simulated Triton's
 * JIT, for `kcache prewarm --cpu` (issue 51): a git checkout, a local store beside it, and runners
 * (a cache folder and a state folder each) outside the checkout, so the checkout stays as git has it.
 */

/**
 * The kernel library. It reads the device at import as FLA does (shared memory picks a constexpr the
 * forward kernel reads), so a worker that did not show the GPU job's device facts could not import it
 * (the simulated driver raises "0 active drivers" with no GPU visible) or would define another kernel.
 * `bwd_kernel` is autotuned over two configs by `n`; `fwd_kernel` calls `helper`.
 */
export const OPS_PY = `import triton
from triton.language import constexpr
from triton.runtime import driver

WIDE = constexpr(driver.active.utils.get_device_properties(0)["max_shared_mem"] >= 200000)


@triton.jit
def helper(x):
    return x * 2


@triton.jit
def fwd_kernel(x_ptr, n, BLOCK: constexpr):
    if WIDE:
        return helper(x_ptr)
    return x_ptr


@triton.autotune(configs=[{"BLOCK": 64, "num_warps": 4}, {"BLOCK": 128, "num_warps": 8}], key=["n"])
@triton.jit
def bwd_kernel(x_ptr, n, BLOCK: constexpr):
    pass  # bwd body
`;

/** The job: each kernel at two sizes (1024 is divisible by 16, 1000 is not: two specializations). */
const JOB_PY = `import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton.compiler
from triton.runtime.jit import Pointer
from lib import ops

for n in (1024, 1000):
    ops.fwd_kernel[(1,)](Pointer("fp32"), n, BLOCK=64)
    ops.bwd_kernel[(1,)](Pointer("fp16"), n)
print(json.dumps(triton.compiler.COUNTS))
`;

/** The edits a pull request makes, each one line (a kernel's first line, part of its key, stays put). */
export const EDITS = {
  /** bwd_kernel's own source. */
  bwd: (s: string) => s.replace("    pass  # bwd body", "    return x_ptr  # bwd body"),
  /** The function fwd_kernel calls. */
  helper: (s: string) => s.replace("return x * 2", "return x * 3"),
};

export interface PrewarmProject {
  root: string;
  /** TMPDIR of every command the project runs. */
  tmp: string;
  dir: string;
  store: string;
  git(...args: string[]): string;
  /** Writes `file` (relative to the checkout) and commits it on the current branch; the new revision. */
  commit(file: string, text: string): string;
  /** `kcache run --profile smoke --json` on the default branch at HEAD, on a fresh runner: exit 0. */
  mainJob(): Promise<{ report: RunReport; stderr: string }>;
  /** A pull request's branch off main, with `edit` committed; its revision. */
  pullRequest(branch: string, edit: { file: string; change: (text: string) => string }): string;
  /** The environment of pull request `n`'s job at HEAD on a fresh runner (its cache and state). */
  prEnv(n: number, runner: string): NodeJS.ProcessEnv;
  /** `kcache prewarm --cpu --profile smoke --json`; its exit, output and report (null when no JSON). */
  prewarm(env: NodeJS.ProcessEnv, args?: string[]): Promise<CliResult & { report: CpuPrewarmReport | null }>;
  /** The GPU job of a pull request: `kcache run --profile smoke --no-save --json`: exit 0. */
  gpuJob(env: NodeJS.ProcessEnv): Promise<{ report: RunReport; stderr: string }>;
  /** The keys of the manifests in a scope ("branch/main", "pr/7"). */
  manifests(scope: string): string[];
  /** A scope's stored plans, by key, read as `kcache prewarm --cpu` reads them. */
  plans(scope: string): Map<string, Plan>;
  /** Rewrites every stored plan of a scope (a store someone else can write). */
  tamper(scope: string, change: (plan: Plan) => void): void;
}

/** The entries of the default branch's stored plan (its one key's), in order. */
export const mainPlanEntries = (p: PrewarmProject) => [...p.plans("branch/main").values()][0]?.entries ?? [];

let runners = 0;

export function prewarmProject(): PrewarmProject {
  const root = tempDir("cpu-prewarm");
  const dir = path.join(root, "checkout");
  const store = path.join(root, "store");
  const tmp = path.join(root, "tmp");
  fs.mkdirSync(path.join(dir, "lib"), { recursive: true });
  fs.mkdirSync(tmp);
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.email=ci@example.com", "-c", "user.name=ci", ...args], {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    })
      .toString()
      .trim();
  const write = (file: string, text: string) => fs.writeFileSync(path.join(dir, file), text);
  write("lib/__init__.py", "");
  write("lib/ops.py", OPS_PY);
  write("job.py", JOB_PY);
  write("README.md", "The project.\n");
  // kcache run writes its logs and report under .kcache/ in the working folder.
  write(".gitignore", ".kcache/\n__pycache__/\n");
  write(
    "kcache.yml",
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      "    path: ${TRITON_CACHE_DIR}",
      `store:\n  path: ${store}`,
      "key:\n  prefix: ops",
      "stack:\n  python: python3",
      "profiles:",
      "  smoke:",
      "    commands:",
      "      - name: job",
      "        run: python3 job.py",
      "",
    ].join("\n"),
  );
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "kernels");
  const head = () => git("rev-parse", "HEAD");

  /** A runner of its own: the CLI's whole environment (nothing of this host's CI leaks in). */
  const runnerEnv = (name: string): NodeJS.ProcessEnv => {
    const at = path.join(root, "runners", `${name}-${runners++}`);
    return {
      PATH: process.env.PATH,
      HOME: root,
      // torch and triton as pip installs them (the stack probe reads metadata), then the simulated Triton.
      PYTHONPATH: `${installedStack()}:${SIM}`,
      TRITON_SIM_COMPILE_MS: "5",
      TRITON_CACHE_DIR: path.join(at, "triton"),
      KCACHE_STATE_DIR: path.join(at, "state"),
      // The runner's temporary folder: what a command leaves there stays with the test (and is seen).
      TMPDIR: tmp,
    };
  };
  const json = <T>(r: CliResult): T | null => {
    try {
      return JSON.parse(r.stdout) as T;
    } catch {
      return null;
    }
  };
  const run = async (args: string[], env: NodeJS.ProcessEnv) => {
    const r = await runCli(args, { env, cwd: dir });
    expect(r.code, `kcache ${args.join(" ")}: ${r.stderr}`).toBe(0);
    return { report: json<RunReport>(r) as RunReport, stderr: r.stderr };
  };
  const listed = (folder: string) =>
    fs.existsSync(folder) ? fs.readdirSync(folder).map((f) => decodeURIComponent(f)) : [];
  const plansDir = (scope: string) => path.join(store, "plans", encodeURIComponent(scope));

  return {
    root,
    tmp,
    dir,
    store,
    git,
    commit(file, text) {
      write(file, text);
      git("add", file);
      git("commit", "-q", "-m", `edit ${file}`);
      return head();
    },
    mainJob() {
      return run(["run", "--profile", "smoke", "--json"], {
        ...runnerEnv("main"),
        GITHUB_EVENT_NAME: "push",
        GITHUB_REF: "refs/heads/main",
        GITHUB_SHA: head(),
      });
    },
    pullRequest(branch, edit) {
      git("checkout", "-q", "-B", branch, "main");
      return this.commit(edit.file, edit.change(fs.readFileSync(path.join(dir, edit.file), "utf8")));
    },
    prEnv(n, runner) {
      const event = path.join(root, `event-${n}.json`);
      fs.writeFileSync(
        event,
        JSON.stringify({ number: n, pull_request: { number: n, head: { repo: { fork: false } } } }),
      );
      return {
        ...runnerEnv(runner),
        GITHUB_EVENT_NAME: "pull_request",
        GITHUB_REF: `refs/pull/${n}/merge`,
        GITHUB_EVENT_PATH: event,
        GITHUB_HEAD_REF: git("rev-parse", "--abbrev-ref", "HEAD"),
        GITHUB_BASE_REF: "main",
        GITHUB_SHA: head(),
      };
    },
    async prewarm(env, args = []) {
      const r = await runCli(["prewarm", "--cpu", "--profile", "smoke", "--json", ...args], {
        env,
        cwd: dir,
      });
      return { ...r, report: json<CpuPrewarmReport>(r) };
    },
    gpuJob(env) {
      return run(["run", "--profile", "smoke", "--no-save", "--json"], env);
    },
    manifests(scope) {
      return listed(path.join(store, "manifests", encodeURIComponent(scope)));
    },
    plans(scope) {
      const out = new Map<string, Plan>();
      for (const f of listed(plansDir(scope))) {
        const object = `plans/${encodeURIComponent(scope)}/${encodeURIComponent(f)}`;
        const data = fs.readFileSync(path.join(plansDir(scope), encodeURIComponent(f)));
        out.set(f.replace(/\.json$/, ""), decodePlan(data, object));
      }
      return out;
    },
    tamper(scope, change) {
      for (const f of fs.readdirSync(plansDir(scope))) {
        const file = path.join(plansDir(scope), f);
        const plan = JSON.parse(fs.readFileSync(file, "utf8")) as Plan;
        change(plan);
        fs.writeFileSync(file, JSON.stringify(plan));
      }
    },
  };
}

/** Kernel names of a plan's entries, sorted ("bwd_kernel", "fwd_kernel", …). */
export const qualnames = (entries: { qualname: string }[]) => entries.map((e) => e.qualname).sort();

/** The kernels a job compiled and loaded (its one command's, as the hook counted them). */
export const kernels = (report: RunReport) => report.commands[0]?.kernels;
