import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, runCli, startCli } from "../helpers/cli.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * A cache never breaks or stalls the build, whatever the job's surroundings do to kcache: each case
 * here once ended `kcache run` before its job's commands or its save ran, or held it forever (found
 * by an adversary pass given the docs' promises).
 */
const REV = "0123456789abcdef0123456789abcdef01234567";

/** A project whose job compiles the simulated Triton's kernels (then runs `after`), on a local store. */
function project(after = ""): { dir: string; config: string; store: string; env: NodeJS.ProcessEnv } {
  const dir = tempDir("bad-luck");
  const config = path.join(dir, "kcache.yml");
  const store = path.join(dir, "store");
  const tc = path.join(dir, "tc");
  const work = `python3 ${SIM}/workload.py 3 1 --prefix core; echo compiled; echo to-stderr >&2${after ? `; ${after}` : ""}`;
  fs.writeFileSync(
    config,
    [
      "caches:",
      `  - { name: triton, kind: triton, path: "${tc}" }`,
      `store: { type: local, path: "${store}" }`,
      "key: { prefix: t }",
      "profiles:",
      "  job:",
      `    env: { PYTHONPATH: "${SIM}", TRITON_CACHE_DIR: "${tc}" }`,
      "    commands:",
      `      - { name: work, run: ${JSON.stringify(work)} }`,
      "",
    ].join("\n"),
  );
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    GITHUB_SHA: REV,
    KCACHE_STATE_DIR: path.join(dir, "state"),
  };
  return { dir, config, store, env };
}

/** The keys saved in the store, in any scope (manifests/<scope>/<key>). */
const keys = (store: string) => {
  const root = path.join(store, "manifests");
  return fs.existsSync(root)
    ? fs.readdirSync(root).flatMap((scope) => fs.readdirSync(path.join(root, scope)))
    : [];
};

/** `kcache run` under bash with `redirect` after it; its exit and stderr (when not redirected). */
function runUnder(p: ReturnType<typeof project>, redirect: string): { code: number; stderr: string } {
  const err = path.join(p.dir, "stderr.txt");
  const line = `${process.execPath} ${BIN} run -c ${p.config} -p job ${redirect}; echo "rc=\${PIPESTATUS[0]}" >&3`;
  const out = execFileSync("bash", ["-c", `exec 3>&1; ( ${line} ) 2>>${err}`], {
    env: p.env,
    cwd: p.dir,
  }).toString();
  return {
    code: Number(/rc=(\d+)/.exec(out)?.[1]),
    stderr: fs.existsSync(err) ? fs.readFileSync(err, "utf8") : "",
  };
}

describe("kcache's output lost: the job still runs and its key is saved", () => {
  it.each([
    ["stdout's reader gone (| head -c1: EPIPE)", "| head -c1 >/dev/null"],
    ["stdout on a full disk (/dev/full: ENOSPC)", ">/dev/full"],
    ["stderr's reader gone", "2>&1 >/dev/null | head -c1 >/dev/null"],
    ["stderr on a full disk", "2>/dev/full"],
  ])("%s", (_what, redirect) => {
    const p = project();
    const r = runUnder(p, redirect);
    expect(r.stderr).not.toMatch(/Unhandled 'error' event|internal error/);
    expect(r.code).toBe(0);
    expect(keys(p.store)).toHaveLength(1);
  });
});

describe("a signal that ends kcache run ends the job's command too", () => {
  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s (a cancelled job, timeout): the command, in a process group of its own, gets it; nothing more runs or is saved",
    async (signal) => {
      const pidFile = "command.pid";
      // The command says which signal it got: the one kcache got, passed on (not the watchdog's TERM).
      const p = project(
        `trap 'echo INT > got; exit 130' INT; trap 'echo TERM > got; exit 143' TERM; echo $$ > ${pidFile}; sleep 30 & wait; touch late`,
      );
      const run = startCli(["run", "-c", p.config, "-p", "job"], { env: p.env, cwd: p.dir });
      const pidAt = path.join(p.dir, pidFile);
      for (let i = 0; i < 600 && !fs.existsSync(pidAt); i++) await new Promise((r) => setTimeout(r, 50));
      const commandPid = Number(fs.readFileSync(pidAt, "utf8"));
      process.kill(run.pid, signal);
      const child = await run.promise;
      expect(child.code).toBeNull(); // ended by the signal, as a shell would be
      expect(fs.readFileSync(path.join(p.dir, "got"), "utf8").trim()).toBe(signal.replace("SIG", ""));
      // The command's shell is gone at once (its sleep with it), not 30 s later.
      const alive = () => {
        try {
          process.kill(commandPid, 0);
          return true;
        } catch {
          return false;
        }
      };
      for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(alive(), "the job's command outlived kcache").toBe(false);
      expect(keys(p.store)).toEqual([]);
    },
  );
});

describe("kcache run killed outright (kill -9, the OOM killer) ends the job's command too", () => {
  it("the command's process group gets SIGTERM from kcache's watchdog once kcache is gone, not 30 s later", async () => {
    const pidFile = "command.pid";
    const p = project(`echo $$ > ${pidFile}; sleep 30; touch late`);
    const run = startCli(["run", "-c", p.config, "-p", "job"], { env: p.env, cwd: p.dir });
    const pidAt = path.join(p.dir, pidFile);
    for (let i = 0; i < 600 && !fs.existsSync(pidAt); i++) await new Promise((r) => setTimeout(r, 50));
    const commandPid = Number(fs.readFileSync(pidAt, "utf8"));
    run.kill();
    expect((await run.promise).code).toBeNull();
    // Running, not a zombie: orphaned by kcache's kill, the shell is reaped by whoever adopts it,
    // which may be slow to (a container's PID 1).
    const alive = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${commandPid}/stat`, "utf8"));
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 300 && alive(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(), "the job's command outlived kcache killed with -9").toBe(false);
    expect(fs.existsSync(path.join(p.dir, "late"))).toBe(false);
  });

  it("a command that ends by itself is not touched: its exit code is the run's, and nothing of the watchdog stays", async () => {
    const p = project("echo $$ > command.pid; exit 7");
    const r = await runCli(["run", "-c", p.config, "-p", "job"], { env: p.env, cwd: p.dir });
    expect(r.code, r.stderr).toBe(7);
    // The watchdog of this run (its last argument the command's group) is gone with kcache.
    const pgid = fs.readFileSync(path.join(p.dir, "command.pid"), "utf8").trim();
    const left = execFileSync("ps", ["-eo", "args"])
      .toString()
      .split("\n")
      .filter((l) => l.includes("kcache-watchdog") && l.trim().endsWith(` ${pgid}`));
    expect(left).toEqual([]);
  });
});

describe("the process's limits", () => {
  const limited = (limit: string, args: string[], p: ReturnType<typeof project>) =>
    spawnSync("bash", ["-c", `${limit} && exec "$0" "$@"`, process.execPath, BIN, ...args], {
      env: p.env,
      cwd: p.dir,
      encoding: "utf8",
      timeout: 120_000,
    });

  it("under a memory limit (ulimit -v 4 GB) kcache run on a local store runs and saves: nothing it does not use is loaded (undici's WebAssembly parser)", () => {
    const p = project();
    const r = limited("ulimit -v 4000000", ["run", "-c", p.config, "-p", "job"], p);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/WebAssembly|Out of memory/);
    expect(keys(p.store)).toHaveLength(1);
  });

  it("too few open files (ulimit -n 24) is said as that, with the fix (exit 2), not as an internal error", () => {
    const p = project();
    const r = limited("ulimit -n 24", ["run", "-c", p.config, "-p", "job"], p);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /kcache: error: too many open files .*ulimit -n.* is too low for kcache; raise it, e.g. `ulimit -n 1024`/,
    );
    expect(r.stderr).not.toMatch(/internal error/);
  });
});

describe("GitHub's files that cannot be written or read: warned, never waited on", () => {
  it("GITHUB_EVENT_PATH a FIFO no one writes, GITHUB_OUTPUT a FIFO no one reads, GITHUB_STEP_SUMMARY a full device: the run ends, saved", async () => {
    const p = project();
    const fifo = (name: string) => {
      const f = path.join(p.dir, name);
      execFileSync("mkfifo", [f]);
      return f;
    };
    const env = {
      ...p.env,
      GITHUB_ACTIONS: "true",
      GITHUB_EVENT_NAME: "push",
      GITHUB_REF: "refs/heads/main",
      GITHUB_EVENT_PATH: fifo("event"),
      GITHUB_OUTPUT: fifo("output"),
      GITHUB_STEP_SUMMARY: "/dev/full",
    };
    const run = spawn(process.execPath, [BIN, "run", "-c", p.config, "-p", "job"], { env, cwd: p.dir });
    let stderr = "";
    run.stderr.on("data", (d: Buffer) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => {
      const bound = setTimeout(() => run.kill("SIGKILL"), 120_000);
      run.on("close", (c) => {
        clearTimeout(bound);
        resolve(c);
      });
    });
    expect(code, stderr).toBe(0);
    // An event payload that cannot be read proves nothing trusted: saved, but not into main's scope.
    expect(keys(p.store)).toHaveLength(1);
    // A FIFO with no reader does not open for writing without blocking (ENXIO): it is passed over.
    expect(stderr).toMatch(/the step's outputs could not be written to \S*output \(ENXIO/);
    expect(stderr).toMatch(/the job summary could not be written to \/dev\/full/);
  });
});

describe("folders kcache run cannot make: the job's commands still run", () => {
  it("the report folder's place is a file (RUNNER_TEMP names one): a folder of the run's own, said; the key saved", () => {
    const p = project();
    const file = path.join(p.dir, "runner-temp-is-a-file");
    fs.writeFileSync(file, "");
    const r = runUnder({ ...p, env: { ...p.env, RUNNER_TEMP: file } }, "");
    expect(r.stderr).not.toContain("internal error");
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/cannot be written \(ENOTDIR.*\); this run's logs and report go to /);
    expect(keys(p.store)).toHaveLength(1);
  });

  it("the cache folder's place is a file: a warning naming it, and the job's commands run", () => {
    const p = project();
    const marker = path.join(p.dir, "the-job-ran");
    const config = fs.readFileSync(p.config, "utf8").replace(/run: ".*"/, `run: "echo ran > ${marker}"`);
    fs.writeFileSync(p.config, config);
    fs.writeFileSync(path.join(p.dir, "tc"), "a file where the cache folder should be");
    const r = runUnder(p, "");
    expect(r.stderr).not.toContain("internal error");
    expect(r.stderr).toMatch(/the cache folder .*tc cannot be made \(EEXIST/);
    expect(fs.existsSync(marker), "the job's command did not run").toBe(true);
  });
});

describe("a local state folder kcache cannot write", () => {
  it("a save and a restore say what they did (saved, the key matched), with a warning for the state", async () => {
    const p = project();
    const file = path.join(p.dir, "not-a-folder");
    fs.writeFileSync(file, "");
    const env = {
      ...p.env,
      KCACHE_STATE_DIR: path.join(file, "state"),
      TRITON_CACHE_DIR: path.join(p.dir, "tc"),
    };
    execFileSync("python3", [`${SIM}/workload.py`, "3", "1", "--prefix", "core"], {
      env: { ...env, PYTHONPATH: SIM },
    });
    const saved = await runCli(["save", "-c", p.config, "--json"], { env, cwd: p.dir });
    expect(saved.code, saved.stderr).toBe(0);
    expect(JSON.parse(saved.stdout)).toMatchObject({ outcome: "saved", faults: [] });
    expect(saved.stderr).toMatch(/the local state .* cannot be written \(ENOTDIR/);
    fs.rmSync(path.join(p.dir, "tc"), { recursive: true });
    const restored = await runCli(["restore", "-c", p.config, "--json"], { env, cwd: p.dir });
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({ matchedKey: expect.stringMatching(/^t-/) });
    expect(restored.stderr).not.toContain("restore skipped");
  });
});

describe("the working folder deleted before kcache starts", () => {
  it.each(["restore", "save", "run"])("kcache %s says so and exits 2, not an internal error", (command) => {
    const p = project();
    const args = command === "run" ? `run -c ${p.config} -p job` : `${command} -c ${p.config}`;
    const script = `mkdir gone && cd gone && rmdir ../gone && ${process.execPath} ${BIN} ${args}; echo "rc=$?"`;
    const r = spawnSync("bash", ["-c", script], { env: p.env, cwd: p.dir, encoding: "utf8" });
    expect(r.stderr).not.toContain("internal error");
    expect(r.stderr).toContain("the working folder no longer exists");
    expect(r.stdout).toContain("rc=2");
  });
});
