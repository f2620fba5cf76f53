import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { makeFakeAscend } from "../../demo/sim/ascend-toolkit.js";
import { runSandboxProfile } from "../helpers/profile.js";
import { SIM } from "../helpers/python-sim.js";
import { sandbox } from "../helpers/sandbox.js";

/** A profile on the simulated Triton-Ascend: each command prints the simulator's own counts. */
function ascendProfile(line: "3.2" | "3.5", ascendHome: string, commands: unknown[]) {
  return {
    expect: "warm",
    "on-unexpected-compile": "fail",
    env: {
      PYTHONPATH: SIM,
      TRITON_SIM_BACKEND: "ascend",
      TRITON_SIM_LINE: line,
      ASCEND_HOME_PATH: ascendHome,
      TRITON_SIM_COMPILE_MS: "2",
    },
    commands,
  };
}
const workload = (name: string, prefix: string, plain = 3, autotuned = 1) => ({
  name,
  run: `python3 ${SIM}/workload.py ${plain} ${autotuned} --prefix ${prefix} > ${name}.out`,
});
const truth = (sb: ReturnType<typeof sandbox>, name: string) =>
  JSON.parse(fs.readFileSync(path.join(sb.dir, `${name}.out`), "utf8")) as {
    compiled: number;
    loaded: number;
  };

describe("kernel counts without a compilation listener (Triton-Ascend 3.2)", () => {
  it("counts each command's compiles from the cache folder, and a warm run at another path compiles none", async () => {
    const sb = sandbox();
    const ascend = makeFakeAscend(path.join(sb.dir, "Ascend"));
    const profile = ascendProfile("3.2", ascend.toolkit, [
      workload("fwd", "fwd"),
      workload("bwd", "bwd", 2, 2),
    ]);
    const cold = await runSandboxProfile(sb, profile, { cachePath: path.join(sb.dir, "runner-a") });
    expect(cold.report.passed).toBe(true);
    const [fwd, bwd] = cold.report.commands;
    expect(fwd?.kernels).toMatchObject({ status: "unavailable", source: "cache-folder", loaded: null });
    expect(truth(sb, "fwd").compiled).toBe(7);
    expect(fwd?.kernels.compiled).toBe(truth(sb, "fwd").compiled);
    expect(bwd?.kernels.compiled).toBe(truth(sb, "bwd").compiled);
    expect(cold.report.kernels).toMatchObject({
      source: "cache-folder",
      compiled: truth(sb, "fwd").compiled + truth(sb, "bwd").compiled,
      loaded: null,
    });
    expect(cold.report.save?.outcome).toBe("saved");

    ascend.reinstallHeaders();
    const warm = await runSandboxProfile(sb, profile, {
      cachePath: path.join(sb.dir, "runner-b", "cache"),
      stateDir: path.join(sb.dir, "state-b"),
    });
    expect(warm.report.restore?.cacheHit).toBe(true);
    expect(truth(sb, "fwd").compiled + truth(sb, "bwd").compiled).toBe(0);
    expect(warm.report.kernels).toMatchObject({ source: "cache-folder", compiled: 0 });
    expect(warm.report.unexpectedCompile).toBeNull();
    expect(warm.report.passed).toBe(true);
  });

  it("expect: warm catches kernels compiled after an exact-key restore, counted from the folder", async () => {
    const sb = sandbox();
    const ascend = makeFakeAscend(path.join(sb.dir, "Ascend"));
    const cachePath = path.join(sb.dir, "cache");
    await runSandboxProfile(sb, ascendProfile("3.2", ascend.toolkit, [workload("fwd", "fwd")]), {
      cachePath,
    });
    // Same key, but the job now compiles one more kernel: on a fresh runner that is unexpected.
    const more = ascendProfile("3.2", ascend.toolkit, [workload("fwd", "fwd", 4)]);
    const warm = await runSandboxProfile(sb, more, {
      cachePath: path.join(sb.dir, "fresh"),
      stateDir: path.join(sb.dir, "state-2"),
    });
    expect(warm.report.restore?.cacheHit).toBe(true);
    expect(warm.report.kernels.compiled).toBe(1);
    expect(warm.report.unexpectedCompile).toMatch(/1 kernels compiled .*fwd_fwd_kernel_3/);
    expect(warm.report.passed).toBe(false);
    expect(warm.report.save).toBeNull();
  });

  it("counts a parallel group as one unit: its commands share the cache folder", async () => {
    const sb = sandbox();
    const ascend = makeFakeAscend(path.join(sb.dir, "Ascend"));
    const profile = ascendProfile("3.2", ascend.toolkit, [
      { name: "pair", devices: [0, 1], parallel: [workload("gdn", "gdn"), workload("kda", "kda", 2, 1)] },
    ]);
    const { report } = await runSandboxProfile(sb, profile);
    const group = report.stages.find((s) => s.name === "pair");
    const expected = truth(sb, "gdn").compiled + truth(sb, "kda").compiled;
    expect(group?.folderKernels?.compiled).toBe(expected);
    expect(group?.summary).toContain(`${expected} kernels compiled (cache folder)`);
    expect(report.kernels.compiled).toBe(expected);
  });
});

describe("where the listener exists (Triton-Ascend 3.5), it and the cache folder agree", () => {
  it("gives the same compile count per command from both sources", async () => {
    const sb = sandbox();
    const ascend = makeFakeAscend(path.join(sb.dir, "Ascend"));
    const profile = ascendProfile("3.5", ascend.toolkit, [
      workload("fwd", "fwd", 4, 2),
      workload("bwd", "bwd", 1, 3),
    ]);
    const { report } = await runSandboxProfile(sb, profile);
    for (const c of report.commands) {
      expect(c.kernels.source).toBe("listener");
      expect(c.kernels.compiled).toBe(truth(sb, c.name).compiled);
      expect(c.kernels.folderCompiled).toBe(c.kernels.compiled);
      expect(c.kernels.loaded).toBe(truth(sb, c.name).loaded);
    }
  });
});
