import { execFile, execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { data, Evaluator, Lexer, Parser } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";
import { afterAll, beforeAll } from "vitest";
import { parse } from "yaml";
import { installedStack } from "../fixtures/installed-stack.js";
import { readCommandFile } from "./runner-files.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");

/** Bundles the action from src/ into `file` (scripts/bundle-action.mjs, as `npm run build:action` does). */
export function bundleAction(file: string): void {
  execFileSync(process.execPath, [path.join(ROOT, "scripts", "bundle-action.mjs"), file], { cwd: ROOT });
}

/**
 * The action bundled from src/ for one test file's tests: built before them, removed after. Beside
 * dist/action.mjs, so it finds python/ and package.json as the shipped action does (ignored by git).
 */
export function actionForTests(name: string): string {
  const file = path.join(ROOT, "dist", `.test-${name}-${process.pid}.mjs`);
  beforeAll(() => bundleAction(file));
  afterAll(() => fs.rmSync(file, { force: true }));
  return file;
}

export interface ActionYml {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, unknown>;
  runs: { using: string; main: string; post?: string; "post-if"?: string };
}

/** action.yml of the action at `sub` ("" for the repository's root, "restore", "save"). */
export function actionYml(sub: "" | "restore" | "save"): ActionYml {
  return parse(fs.readFileSync(path.join(ROOT, sub, "action.yml"), "utf8")) as ActionYml;
}

export interface StepResult {
  code: number | null;
  /** stdout and stderr together, as the job log shows them. */
  log: string;
  outputs: Record<string, string>;
}

interface PendingPost {
  sub: "" | "restore" | "save";
  inputs: Record<string, string>;
  state: Record<string, string>;
  condition: string;
}

/**
 * A job on a simulated GitHub runner, run as the runner runs a JavaScript action: `node <runs.main>`
 * with INPUT_* (action.yml's defaults for inputs not given), fresh GITHUB_OUTPUT, GITHUB_ENV and
 * GITHUB_STATE files per step, variables exported by earlier steps in the environment, and at the end
 * of the job each action's `post:` in reverse order, in a new process with its saved state as STATE_*,
 * when its `post-if` (evaluated with GitHub's expression library) holds. `bundle` is the action's
 * JavaScript (built from src/ by the test, or dist/action.mjs of the action as a runner downloads
 * it), standing in for runs.main and runs.post; `node` is the Node.js that runs it.
 */
export class RunnerJob {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly summary: string;
  private exported: Record<string, string> = {};
  private posts: PendingPost[] = [];
  private step = 0;
  /** "failure" once a step failed, as the job status post-if conditions see. */
  status: "success" | "failure" = "success";

  constructor(
    root: string,
    name: string,
    event: Record<string, string>,
    private readonly bundle: string,
    private readonly workspace = root,
    private readonly nodeBin = process.execPath,
  ) {
    this.dir = path.join(root, name);
    for (const d of ["temp", "home"]) fs.mkdirSync(path.join(this.dir, d), { recursive: true });
    this.summary = path.join(this.dir, "summary.md");
    fs.writeFileSync(this.summary, "");
    this.env = {
      PATH: process.env.PATH,
      PYTHONPATH: installedStack(),
      HOME: path.join(this.dir, "home"),
      GITHUB_ACTIONS: "true",
      GITHUB_WORKSPACE: workspace,
      RUNNER_TEMP: path.join(this.dir, "temp"),
      GITHUB_STEP_SUMMARY: this.summary,
      GITHUB_REPOSITORY: "org/kernels",
      // As GitHub's runner marks every process of a job, to end those left over when the job ends.
      RUNNER_TRACKING_ID: `github_${path.basename(this.dir)}_${process.pid}_${Date.now()}`,
      ...event,
    };
  }

  /** The job's processes still running, found by RUNNER_TRACKING_ID as GitHub's runner finds them. */
  processes(): number[] {
    const mark = `RUNNER_TRACKING_ID=${this.env.RUNNER_TRACKING_ID}`;
    return fs
      .readdirSync("/proc")
      .filter((n) => /^\d+$/.test(n))
      .filter((pid) => {
        try {
          return fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(mark);
        } catch {
          return false; // gone, or not ours to read
        }
      })
      .map(Number);
  }

  /** Ends the processes the job left running (a lookup server whose save step never came, as when a test fails before it). */
  killOrphans(): void {
    for (const pid of this.processes())
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
  }

  /** The environment a `run:` step sees: the job's plus what earlier steps exported. */
  stepEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return { ...this.env, ...this.exported, ...extra };
  }

  /** `uses: kcache[/restore|/save]` with these inputs. */
  async uses(sub: "" | "restore" | "save", inputs: Record<string, string>): Promise<StepResult> {
    const yml = actionYml(sub);
    const r = await this.node(yml, inputs, {});
    if (yml.runs.post) {
      this.posts.push({
        sub,
        inputs,
        state: r.state,
        condition: yml.runs["post-if"] ?? "success()",
      });
    }
    if (r.code !== 0) this.status = "failure";
    return { code: r.code, log: r.log, outputs: r.outputs };
  }

  /** A `run:` step: a program with the step environment; a non-zero exit fails the job. */
  run(file: string, args: string[], extra: NodeJS.ProcessEnv = {}): string {
    try {
      return execFileSync(file, args, { env: this.stepEnv(extra), cwd: this.workspace }).toString();
    } catch (e) {
      this.status = "failure";
      return String((e as { stdout?: Buffer }).stdout ?? "");
    }
  }

  /**
   * `run` without blocking this process: servers the test runs in it (GitHub's cache service) go on
   * answering while the step runs, as they would on a real runner.
   */
  runAsync(file: string, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<string> {
    return new Promise((resolve) => {
      execFile(file, args, { env: this.stepEnv(extra), cwd: this.workspace }, (err, stdout) => {
        if (err) this.status = "failure";
        resolve(String(stdout));
      });
    });
  }

  /** The end of the job: post steps in reverse order, each when its post-if holds. */
  async end(): Promise<{ sub: string; ran: boolean; result: StepResult | null }[]> {
    const out: { sub: string; ran: boolean; result: StepResult | null }[] = [];
    for (const p of this.posts.reverse()) {
      if (!this.holds(p.condition)) {
        out.push({ sub: p.sub, ran: false, result: null });
        continue;
      }
      const r = await this.node(actionYml(p.sub), p.inputs, p.state);
      out.push({ sub: p.sub, ran: true, result: { code: r.code, log: r.log, outputs: r.outputs } });
    }
    this.posts = [];
    return out;
  }

  private holds(condition: string): boolean {
    const status = {
      success: () => this.status === "success",
      failure: () => this.status === "failure",
      always: () => true,
      cancelled: () => false,
    };
    const funcs = Object.entries(status).map(([name, f]) => ({
      name,
      minArgs: 0,
      maxArgs: 0,
      call: () => new data.BooleanData(f()),
    }));
    const lexed = new Lexer(condition).lex();
    const expr = new Parser(lexed.tokens, ["env"], funcs).parse();
    const env = new data.Dictionary(
      ...Object.entries(this.stepEnv()).map(([key, v]) => ({ key, value: new data.StringData(v ?? "") })),
    );
    const ctx = new data.Dictionary({ key: "env", value: env });
    return truthy(new Evaluator(expr, ctx, new Map(funcs.map((f) => [f.name, f]))).evaluate());
  }

  private node(
    yml: ActionYml,
    inputs: Record<string, string>,
    state: Record<string, string>,
  ): Promise<{
    code: number | null;
    log: string;
    outputs: Record<string, string>;
    state: Record<string, string>;
  }> {
    const n = ++this.step;
    const files = {
      output: path.join(this.dir, `output-${n}`),
      env: path.join(this.dir, `env-${n}`),
      state: path.join(this.dir, `state-${n}`),
    };
    for (const f of Object.values(files)) fs.writeFileSync(f, "");
    const env: NodeJS.ProcessEnv = {
      ...this.stepEnv(),
      GITHUB_OUTPUT: files.output,
      GITHUB_ENV: files.env,
      GITHUB_STATE: files.state,
    };
    for (const given of Object.keys(inputs))
      if (!(given in yml.inputs)) throw new Error(`the action has no input ${given}`);
    for (const [name, spec] of Object.entries(yml.inputs))
      env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] = inputs[name] ?? spec.default ?? "";
    for (const [k, v] of Object.entries(state)) env[`STATE_${k}`] = v;
    return new Promise((resolve) => {
      const child = spawn(this.nodeBin, [this.bundle], { env, cwd: this.workspace });
      let log = "";
      child.stdout.on("data", (d) => {
        log += d;
      });
      child.stderr.on("data", (d) => {
        log += d;
      });
      child.on("close", (code) => {
        Object.assign(this.exported, readCommandFile(files.env));
        resolve({ code, log, outputs: readCommandFile(files.output), state: readCommandFile(files.state) });
      });
    });
  }
}
