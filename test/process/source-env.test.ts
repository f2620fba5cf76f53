import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { makeFakeAscend } from "../../demo/sim/ascend-toolkit.js";
import type { RunReport } from "../../src/pipeline/run-profile.js";
import { runCli } from "../helpers/cli.js";
import { runSandboxProfile } from "../helpers/profile.js";
import { SIM } from "../helpers/python-sim.js";
import { sandbox, tempDir } from "../helpers/sandbox.js";

describe("a profile's source: scripts", () => {
  it("give every command set_env.sh's environment, so Triton-Ascend finds CANN; a command's own source comes after", async () => {
    const sb = sandbox();
    const ascend = makeFakeAscend(path.join(sb.dir, "Ascend"));
    const extra = path.join(sb.dir, "extra.sh");
    fs.writeFileSync(extra, "export FLA_EXTRA=from-command-source\n");
    const { report } = await runSandboxProfile(sb, {
      source: [ascend.setEnv],
      env: {
        PYTHONPATH: SIM,
        TRITON_SIM_BACKEND: "ascend",
        TRITON_SIM_LINE: "3.2",
        TRITON_SIM_COMPILE_MS: "1",
      },
      commands: [
        { name: "workload", run: `python3 ${SIM}/workload.py 2 1 > out.json` },
        {
          name: "env",
          source: [extra],
          run: 'echo "$ASCEND_HOME_PATH|$FLA_EXTRA|$(command -v bishengir-compile)" > env.txt',
        },
      ],
    });
    expect(report.passed).toBe(true);
    expect(JSON.parse(fs.readFileSync(path.join(sb.dir, "out.json"), "utf8")).compiled).toBeGreaterThan(0);
    const [home, extraVar, bishengir] = fs
      .readFileSync(path.join(sb.dir, "env.txt"), "utf8")
      .trim()
      .split("|");
    expect(home).toBe(path.join(ascend.root, "ascend-toolkit", "latest"));
    expect(extraVar).toBe("from-command-source");
    expect(bishengir).toBe(path.join(ascend.root, "ascend-toolkit", "latest", "bin", "bishengir-compile"));
  });

  it("fails a command whose own source fails, with the script named, and saves nothing", async () => {
    const sb = sandbox();
    const { report } = await runSandboxProfile(sb, {
      commands: [{ name: "bench", source: ["missing.sh"], run: "echo ran > ran.txt" }],
    });
    expect(report.passed).toBe(false);
    expect(report.commands[0]?.exitCode).not.toBe(0);
    expect(fs.existsSync(path.join(sb.dir, "ran.txt"))).toBe(false);
    expect(fs.readFileSync(report.commands[0]?.log as string, "utf8")).toMatch(
      /kcache: source '.*missing\.sh' failed/,
    );
    expect(report.save).toBeNull();
  });
});

describe("kcache run with source:", () => {
  function project(source: string) {
    const dir = tempDir("kcache-source");
    const ascend = makeFakeAscend(path.join(dir, "Ascend"));
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      [
        "caches:",
        "  - name: triton",
        "    kind: triton",
        `    path: ${path.join(dir, "cache")}`,
        `store:\n  path: ${path.join(dir, "store")}`,
        "key:\n  prefix: npu",
        "profiles:",
        "  bench:",
        `    source: ${source.replace("SETENV", ascend.setEnv)}`,
        "    commands:",
        "      - name: hello",
        "        run: echo hello",
        "",
      ].join("\n"),
    );
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      KCACHE_STATE_DIR: path.join(dir, "state"),
      KCACHE_ASCEND_ROOT: path.join(dir, "no-default-ascend"),
      KCACHE_NVIDIA_PROC: "/nonexistent",
      GITHUB_SHA: "e".repeat(40),
    };
    return { dir, env, ascend };
  }

  it("probes the stack in the sourced environment: CANN found through ASCEND_TOOLKIT_HOME is keyed", async () => {
    const p = project("SETENV");
    const r = await runCli(["run", "--profile", "bench", "--json"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as RunReport;
    const stack = await runCli(["stack", "--json"], {
      env: { ...p.env, ASCEND_TOOLKIT_HOME: path.join(p.ascend.root, "ascend-toolkit", "latest") },
      cwd: p.dir,
    });
    const j = JSON.parse(stack.stdout) as { stackId: string; components: Record<string, string> };
    expect(j.components.cann).toBe("9.0.0");
    expect(report.stackId).toBe(j.stackId);
  });

  it("stops before anything runs when a profile's source script fails, naming it (exit 2)", async () => {
    const p = project(path.join("SETENV-gone"));
    const r = await runCli(["run", "--profile", "bench"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /kcache\.yml: profiles\.bench\.source: source .*set_env\.sh-gone does not exist/,
    );
    expect(r.stdout).not.toContain("hello");

    const failing = path.join(p.dir, "bad.sh");
    fs.writeFileSync(failing, "echo 'set_env: unsupported architecture' >&2\nreturn 3\n");
    const q = project(failing);
    const r2 = await runCli(["run", "--profile", "bench"], { env: q.env, cwd: q.dir });
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/source .*bad\.sh returned 3:\n\s+set_env: unsupported architecture/);
  });
});
