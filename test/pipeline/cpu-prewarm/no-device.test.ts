import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EDITS, kernels, prewarmProject } from "../../helpers/cpu-prewarm-project.js";
import { SIM } from "../../helpers/python-sim.js";
import { tempDir } from "../../helpers/sandbox.js";

/*
 * A CPU prewarm never asks a device anything (issue 51): its workers run with no GPU visible and are
 * shown the device facts the GPU job's plan recorded instead. The simulated Triton's driver appends a
 * line (its pid) to TRITON_SIM_DEVICE_LOG each time a process asks it about the device, and raises
 * "0 active drivers" when none is visible: the log is the proof the workers never asked.
 */
const deviceLog = () => path.join(tempDir("device-log"), "asked.log");
const asked = (log: string) => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim() : "");

describe("kcache prewarm --cpu touches no device", () => {
  it("the simulated driver's log records a process that asks it (the instrument works)", () => {
    const log = deviceLog();
    const r = spawnSync(
      "python3",
      ["-c", "from triton.runtime import driver; driver.active.get_current_target()"],
      {
        env: {
          PATH: process.env.PATH,
          PYTHONPATH: SIM,
          TRITON_SIM_DEVICE_LOG: log,
          CUDA_VISIBLE_DEVICES: "",
        },
      },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr.toString()).toContain("0 active drivers");
    expect(asked(log)).toMatch(/^\d+$/);
  });

  it("its workers compile a changed kernel and import a library that reads the device, and never ask the driver", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });
    const log = deviceLog();
    const prewarm = await p.prewarm({ ...p.prEnv(7, "cpu"), TRITON_SIM_DEVICE_LOG: log }, ["--workers", "2"]);
    expect(prewarm.code, prewarm.stderr).toBe(0);
    // lib/ops.py reads the device's shared memory at import: had a worker asked the simulated driver,
    // its import would have failed (no GPU visible) and every entry been left as missing.
    expect(prewarm.report?.counts).toEqual({ unchanged: 2, compiled: 4, cached: 0, missing: 0, failed: 0 });
    expect(prewarm.report?.touchedCuda).toBe(false);
    expect(asked(log)).toBe("");
  });

  it("the device facts the workers show are the plan's: other facts recorded, another kernel defined", async () => {
    const p = prewarmProject();
    const base = await p.mainJob();
    // As recorded, the library's import sees the GPU job's 232448 bytes of shared memory: WIDE.
    expect(p.plans("branch/main").get(base.report.key)?.device?.triton).toMatchObject({
      max_shared_mem: 232448,
    });
    p.pullRequest("pr", { file: "README.md", change: (s) => `${s}More words.\n` });
    const asRecorded = await p.prewarm(p.prEnv(7, "cpu"));
    expect(asRecorded.report?.counts).toMatchObject({ unchanged: 6, compiled: 0 });

    // The same pull request on a plan that says the GPU had 1000 bytes: the workers show that, the
    // library picks WIDE = False, and fwd_kernel's key (it reads WIDE) is no longer the GPU job's.
    p.tamper("branch/main", (plan) => {
      if (plan.device?.triton) plan.device.triton.max_shared_mem = 1000;
    });
    const small = await p.prewarm(p.prEnv(8, "cpu-small"));
    expect(small.code, small.stderr).toBe(0);
    expect(small.report?.counts).toMatchObject({ unchanged: 4, compiled: 2 });
    // The GPU job, on its real device, loads main's fwd_kernel: none of the 2 the prewarm made is its.
    const gpu = await p.gpuJob(p.prEnv(8, "gpu"));
    expect(kernels(gpu.report)?.compiled).toBe(0);
    expect(gpu.report.cpuPrewarm).toMatchObject({ compiledAhead: 2, loadedAhead: 0 });
  });
});
