import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { installedStack } from "../fixtures/installed-stack.js";
import { BIN } from "../helpers/cli.js";
import { SIM } from "../helpers/python-sim.js";
import { S3RVER_CREDENTIALS } from "../helpers/s3rver.js";
import { CORE, type Workload, workloadArgs } from "./reference.js";
import type { S3Sim } from "./s3-world.js";

/**
 * kcache's world as the simulation drives it: one store shared by every job, runners whose cache
 * folders outlive jobs (A: shared by every job, as FLA's H100 runner is; B: the same with isolate),
 * ephemeral runners that start empty, and the jobs: the default branch's, pull requests' (a fork's
 * among them), builds kcache cannot place, and processes that never ran kcache at all. Every kcache
 * command is the real CLI (bin/kcache.js, the bundled build) in a process of its own; every job's
 * compiles are the simulated Triton (demo/sim) in a real Python process, under kcache's hook where
 * the job runs under `kcache run`.
 */
export type Trust = "main" | "pr" | "fork" | "unplaced" | "two-cis";
export type Runner = "A" | "B" | "fresh";

export interface CliRun {
  args: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** Killed by the world at its bound (I5), or on purpose (a kill -9 step). */
  timedOut: boolean;
  killed: boolean;
}

/** The store the jobs share: a folder, or an S3-compatible server behind the world's fault proxy. */
export interface StoreSpec {
  kind: "local" | "s3";
  /** The folder of a local store. */
  dir?: string;
  /** S3: endpoint (the fault proxy's), bucket and this world's prefix. */
  endpoint?: string;
  bucket?: string;
  prefix?: string;
  /** The S3 server's controls (faults, the oracle's mirror). */
  s3?: S3Sim;
}

/** How long any one kcache command may take before it counts as hung (I5): its idle timeouts and slack. */
export const COMMAND_BOUND_MS = 90_000;
/** The S3 store's idle timeout in the simulation (the bound of a stalled transfer). */
export const S3_IDLE_MS = 3000;

export class World {
  readonly dir: string;
  /** A folder outside every cache holding a secret: no kcache object may ever hold its bytes (I3). */
  readonly secretDir: string;
  readonly secret: string;
  private rev = 0;
  /** Objects the simulation itself deleted or damaged in the store: a manifest naming one is broken by us, not kcache. */
  readonly damaged = new Set<string>();
  /** What happened, step by step, for a failure's report. */
  readonly history: string[] = [];
  readonly violations: string[] = [];
  readonly runs: CliRun[] = [];
  private children = new Set<ChildProcess>();

  readonly store: StoreSpec;

  constructor(
    readonly seed: number,
    store: StoreSpec,
  ) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-sim-"));
    // A local store is the world's own folder; an S3 store is the caller's (a prefix of its own per world).
    // The oracle reads an S3 store through a mirror of its objects in this folder.
    this.store = { ...store, dir: path.join(this.dir, store.kind === "local" ? "store" : "mirror") };
    this.secretDir = path.join(this.dir, "outside");
    fs.mkdirSync(this.secretDir);
    this.secret = `KCACHE-SIM-SECRET-${randomBytes(8).toString("hex")}`;
    fs.writeFileSync(path.join(this.secretDir, "secret.txt"), `${this.secret}\n`);
    // Runners in service: their folders hold what earlier jobs compiled there (the core kernels),
    // which no key vouches for (local, unverified: a save never uploads them as they are).
    for (const r of ["A", "B"]) {
      const cache = path.join(this.dir, `runner-${r}`, "triton");
      fs.mkdirSync(cache, { recursive: true });
      execFileSync("python3", workloadArgs(CORE), {
        env: { PATH: process.env.PATH, PYTHONPATH: SIM, TRITON_CACHE_DIR: cache, TRITON_SIM_COMPILE_MS: "0" },
        stdio: "ignore",
      });
    }
    fs.mkdirSync(path.join(this.dir, "project"));
  }

  /**
   * A folder outside every cache shaped as a Triton entry (a group file naming a file that holds the
   * secret): what a job's link may point an entry folder at.
   */
  outsideEntry(): string {
    const d = path.join(this.dir, "outside-entry");
    if (!fs.existsSync(d)) {
      fs.mkdirSync(d);
      fs.writeFileSync(path.join(d, "k.json"), `${this.secret}\n`);
      fs.writeFileSync(
        path.join(d, "__grp__k.json"),
        JSON.stringify({ child_paths: { "k.json": path.join(d, "k.json") } }),
      );
    }
    return d;
  }

  /** The store's folder: a local store's, or the mirror of an S3 store's objects (read by the oracle). */
  get storeDir(): string {
    return this.store.dir as string;
  }

  /** A new revision of the default branch (its code: mainCode(rev)). */
  nextRevision(): number {
    return ++this.rev;
  }

  get revision(): number {
    return this.rev;
  }

  /** The runner's persistent cache folder, or a fresh one for an ephemeral runner. */
  folder(runner: Runner, job: number): { cache: string; state: string } {
    if (runner === "fresh") {
      const d = path.join(this.dir, `fresh-${job}`);
      return { cache: path.join(d, "triton"), state: path.join(d, "state") };
    }
    const d = path.join(this.dir, `runner-${runner}`);
    return { cache: path.join(d, "triton"), state: path.join(d, "state") };
  }

  /**
   * kcache.yml for a job: its store, the Triton cache at $CACHE_ROOT (isolate on runner B), lazy
   * and live as asked, and the profile `job`: the core kernels and the job's own code ($SIM_PREFIX).
   */
  config(opts: { lazy: boolean; live: boolean; isolate: boolean; name: string }): string {
    const file = path.join(this.dir, "project", `${opts.name}.yml`);
    if (fs.existsSync(file)) return file;
    const store =
      this.store.kind === "local"
        ? [`store:`, `  path: ${this.storeDir}`, ...(opts.live ? ["  live: true"] : [])]
        : [
            "store:",
            "  type: s3",
            `  bucket: ${this.store.bucket}`,
            `  prefix: ${this.store.prefix}`,
            "  path-style: true",
            "  conditional-writes: always",
            `  idle-timeout: ${S3_IDLE_MS / 1000}s`,
            "  connect-timeout: 2s",
            ...(opts.live ? ["  live: true"] : []),
          ];
    const workload = (prefix: string, plain: number, autotuned: number) =>
      `python3 ${SIM}/workload.py ${plain} ${autotuned} --prefix ${prefix}`;
    fs.writeFileSync(
      file,
      [
        "caches:",
        "  - name: triton",
        "    kind: triton",
        "    path: ${CACHE_ROOT}",
        ...(opts.isolate ? ["    isolate: true"] : []),
        ...(opts.lazy ? ["    restore: lazy"] : []),
        ...store,
        "key:",
        "  prefix: sim",
        "profiles:",
        "  job:",
        "    env:",
        `      TRITON_SIM_COMPILE_MS: "0"`,
        "    commands:",
        "      - name: core",
        `        run: ${workload("core", 3, 1)}`,
        "      - name: own",
        `        run: python3 ${SIM}/workload.py 2 "$SIM_AUTOTUNED" --prefix "$SIM_PREFIX"`,
        "      - name: beside",
        // The world acts beside the job here (other jobs' processes, hostile lines), then lets it end.
        `        run: 'if [ -n "$SIM_BESIDE" ]; then env > "$SIM_BESIDE.env"; touch "$SIM_BESIDE.ready"; while [ ! -f "$SIM_BESIDE.done" ]; do sleep 0.02; done; fi'`,
        "",
      ].join("\n"),
    );
    return file;
  }

  /** The environment of a job of `trust` on `runner` at the default branch's revision `rev`. */
  env(
    trust: Trust,
    cache: string,
    state: string,
    rev: number,
    pr = 1,
    runner: Runner = "A",
  ): NodeJS.ProcessEnv {
    const sha = (rev * 7919 + (trust === "main" ? 0 : pr)).toString(16).padStart(40, "0");
    const base: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: this.dir,
      PYTHONPATH: `${installedStack()}:${SIM}`,
      CACHE_ROOT: cache,
      TRITON_CACHE_DIR: cache,
      KCACHE_STATE_DIR: state,
      TRITON_SIM_COMPILE_MS: "0",
      KCACHE_THREADS: "2",
      ...(this.store.kind === "s3" ? { ...S3RVER_CREDENTIALS, KCACHE_S3_ENDPOINT: this.store.endpoint } : {}),
    };
    if (trust === "unplaced") return { ...base, CI: "true", BUILD_NUMBER: String(rev), GIT_COMMIT: sha };
    const github: NodeJS.ProcessEnv = {
      ...base,
      GITHUB_ACTIONS: "true",
      GITHUB_SHA: sha,
      GITHUB_RUN_ID: String(rev),
      GITHUB_REPOSITORY: "fla-org/kernels",
      // What GitHub says of the machine: a fresh one of its own, or one that keeps its folders.
      RUNNER_ENVIRONMENT: runner === "fresh" ? "github-hosted" : "self-hosted",
    };
    if (trust === "main" || trust === "two-cis") {
      const main = { ...github, GITHUB_REF: "refs/heads/main", GITHUB_EVENT_NAME: "push" };
      if (trust === "main") return main;
      // GitHub's variables of a push to main, and GitLab's of a fork's merge request, at once.
      return {
        ...main,
        GITLAB_CI: "true",
        CI_PIPELINE_SOURCE: "merge_request_event",
        CI_MERGE_REQUEST_IID: String(pr),
        CI_PROJECT_ID: "1",
        CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "99",
      };
    }
    const event = path.join(this.dir, `event-${trust}-${pr}.json`);
    fs.writeFileSync(
      event,
      JSON.stringify({
        number: pr,
        repository: { full_name: "fla-org/kernels", default_branch: "main" },
        pull_request: {
          number: pr,
          base: { ref: "main" },
          head: { repo: { full_name: trust === "fork" ? "someone/kernels" : "fla-org/kernels" } },
        },
      }),
    );
    return {
      ...github,
      GITHUB_REF: `refs/pull/${pr}/merge`,
      GITHUB_EVENT_NAME: "pull_request",
      GITHUB_BASE_REF: "main",
      GITHUB_EVENT_PATH: event,
    };
  }

  /**
   * Runs the real CLI. A command still running at COMMAND_BOUND_MS is killed and counted against
   * I5; `killAfterMs` kills it with SIGKILL at that moment on purpose (a runner's kill -9).
   */
  cli(args: string[], env: NodeJS.ProcessEnv, opts: { killAfterMs?: number } = {}): Promise<CliRun> {
    const t0 = Date.now();
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd: path.join(this.dir, "project") });
    this.children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      if (stdout.length < 1 << 20) stdout += d;
    });
    child.stderr.on("data", (d: Buffer) => {
      if (stderr.length < 1 << 20) stderr += d;
    });
    let timedOut = false;
    let killed = false;
    const bound = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, COMMAND_BOUND_MS);
    const kill =
      opts.killAfterMs !== undefined
        ? setTimeout(() => {
            killed = true;
            child.kill("SIGKILL");
          }, opts.killAfterMs)
        : undefined;
    return new Promise((resolve) => {
      child.on("close", (code, signal) => {
        clearTimeout(bound);
        if (kill) clearTimeout(kill);
        this.children.delete(child);
        const run: CliRun = { args, code, signal, stdout, stderr, ms: Date.now() - t0, timedOut, killed };
        this.runs.push(run);
        // KCACHE_SIM_DEBUG=1: each command's line and what it said, as it ran.
        if (process.env.KCACHE_SIM_DEBUG)
          process.stderr.write(`kcache ${args.join(" ")} -> ${code} in ${run.ms} ms\n${stderr}`);
        resolve(run);
      });
    });
  }

  /**
   * A CI job's own shell: the process that lasts as long as the job, which its kcache commands run
   * under (kcache names a job's markers and folders for it: process/job-anchor.ts), as a runner's
   * job script is. Every job of the world has its own, so two jobs at once are two jobs to kcache.
   */
  jobShell(job: number): JobShell {
    const shell = new JobShell(path.join(this.dir, `job-${job}-shell`), path.join(this.dir, "project"), this);
    this.children.add(shell.process);
    return shell;
  }

  /** A job's compiles outside kcache: the simulated Triton into `cache`, with `env` (the hook's, when given). */
  workload(w: Workload, cache: string, env: NodeJS.ProcessEnv = {}): Promise<void> {
    return new Promise((resolve) => {
      const child = spawn("python3", workloadArgs(w), {
        env: {
          PATH: process.env.PATH,
          HOME: this.dir,
          ...env,
          PYTHONPATH: env.PYTHONPATH ? `${env.PYTHONPATH}:${SIM}` : SIM,
          TRITON_CACHE_DIR: cache,
          TRITON_SIM_COMPILE_MS: "0",
        },
        stdio: "ignore",
      });
      this.children.add(child);
      child.on("close", () => {
        this.children.delete(child);
        resolve();
      });
    });
  }

  note(line: string): void {
    this.history.push(line);
  }

  violated(invariant: string, what: string): void {
    this.violations.push(`${invariant}: ${what}`);
  }

  /** Ends the processes of a job whose environment names `folder` (its cache), as a CI runner ends a cancelled job's. */
  endJobProcesses(folder: string): void {
    for (let round = 0; round < 10 && killStragglers(folder) > 0; round++);
  }

  /** Ends every process the world started and removes its folders. */
  dispose(): void {
    for (const c of this.children) c.kill("SIGKILL");
    // A job's processes that a kill -9 orphaned may still be writing (seed 200 of the first long run; seed
    // 505 of the third, a simulated compile outliving the retries): every process whose environment
    // names this world's folder is ended first, until none is left.
    for (let round = 0; round < 10 && killStragglers(this.dir) > 0; round++);
    fs.rmSync(this.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  }
}

/** Ends (SIGKILL) every process but this one whose environment names `dir`; how many it found. */
function killStragglers(dir: string): number {
  let found = 0;
  for (const name of fs.readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (!fs.readFileSync(`/proc/${pid}/environ`, "latin1").includes(dir)) continue;
      process.kill(pid, "SIGKILL");
      found++;
    } catch {
      // gone already, or not ours to read
    }
  }
  return found;
}

/** Quotes a word for the shell. */
const sh = (w: string) => `'${w.replace(/'/g, "'\\''")}'`;

/** A long-lived bash reading commands on its standard input: one CI job's shell (World.jobShell). */
export class JobShell {
  readonly process: ChildProcess;
  private n = 0;
  /** How the shell ended, once it has: a command sent to it then never runs. */
  private ended: string | null = null;

  constructor(
    private readonly dir: string,
    private readonly cwd: string,
    private readonly world: World,
  ) {
    fs.mkdirSync(dir, { recursive: true });
    this.process = spawn("bash", ["-s"], {
      stdio: ["pipe", "ignore", fs.openSync(path.join(dir, "shell.err"), "w")],
      env: { PATH: process.env.PATH },
    });
    this.process.on("exit", (code, signal) => {
      this.ended = `exit ${code}, signal ${signal}`;
    });
  }

  /** Runs the CLI as a child of this shell, with exactly `env`; bounded and killed as World.cli is. */
  async cli(args: string[], env: NodeJS.ProcessEnv, opts: { killAfterMs?: number } = {}): Promise<CliRun> {
    const base = path.join(this.dir, `c${++this.n}`);
    const exports = Object.entries(env)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `export ${k}=${sh(v as string)}`);
    // exec: the CLI takes the script's process, so its parent is the job's shell.
    fs.writeFileSync(
      `${base}.sh`,
      [
        ...exports,
        `cd ${sh(this.cwd)}`,
        `echo $$ > ${sh(`${base}.pid`)}`,
        `exec ${sh(process.execPath)} ${sh(BIN)} ${args.map(sh).join(" ")} > ${sh(`${base}.out`)} 2> ${sh(`${base}.err`)}`,
        "",
      ].join("\n"),
    );
    const t0 = Date.now();
    this.process.stdin?.write(
      `bash ${sh(`${base}.sh`)}; echo $? > ${sh(`${base}.code.tmp`)}; mv ${sh(`${base}.code.tmp`)} ${sh(`${base}.code`)}\n`,
    );
    let timedOut = false;
    let killed = false;
    const kill = () => {
      try {
        process.kill(Number(fs.readFileSync(`${base}.pid`, "utf8")), "SIGKILL");
      } catch {
        // not started yet, or already gone
      }
    };
    while (!fs.existsSync(`${base}.code`)) {
      // A shell that has ended runs nothing more: its job is broken (I5), not waited for (seed 49).
      if (this.ended !== null) return this.brokenShell(args, t0);
      const ms = Date.now() - t0;
      if (
        !killed &&
        opts.killAfterMs !== undefined &&
        ms >= opts.killAfterMs &&
        fs.existsSync(`${base}.pid`)
      ) {
        killed = true;
        kill();
      }
      if (!timedOut && ms >= COMMAND_BOUND_MS) {
        timedOut = true;
        kill();
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const code = Number(fs.readFileSync(`${base}.code`, "utf8"));
    const read = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8").slice(0, 1 << 20) : "");
    const run: CliRun = {
      args,
      code,
      signal: code === 137 ? "SIGKILL" : null,
      stdout: read(`${base}.out`),
      stderr: read(`${base}.err`),
      ms: Date.now() - t0,
      timedOut,
      killed,
    };
    this.world.runs.push(run);
    if (process.env.KCACHE_SIM_DEBUG)
      process.stderr.write(`kcache ${args.join(" ")} -> ${code} in ${run.ms} ms\n${run.stderr}`);
    return run;
  }

  /** What the world records when the job's shell ended under a command: I5, and a run that never ran. */
  private brokenShell(args: string[], t0: number): CliRun {
    const said = fs.readFileSync(path.join(this.dir, "shell.err"), "utf8").slice(-500);
    this.world.violated("I5", `the job's shell ended (${this.ended}) before kcache ${args[0]}: ${said}`);
    const run: CliRun = {
      args,
      code: -1,
      signal: null,
      stdout: "",
      stderr: "",
      ms: Date.now() - t0,
      timedOut: false,
      killed: false,
    };
    this.world.runs.push(run);
    return run;
  }

  close(): void {
    this.process.stdin?.end();
  }
}
