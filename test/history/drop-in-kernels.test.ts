import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { actionForTests, RunnerJob } from "../helpers/action-runner.js";
import { dumpDom } from "../helpers/chromium.js";
import { runCli } from "../helpers/cli.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * A drop-in job (the action in actions/cache mode: restore step, the user's own steps, post step)
 * has kcache's hook in, so `kcache stats` counts its kernels as `kcache run` does: the hook's
 * loaded and compiled, never the cache entries the save found (launchers, autotune results).
 */
const ACTION = actionForTests("drop-in-kernels");
const PUSH = { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" };

function project() {
  const root = tempDir("drop-in-kernels");
  fs.writeFileSync(
    path.join(root, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      `    path: ${path.join(root, "runner-cache")}`,
      "store:",
      `  path: ${path.join(root, "store")}`,
      "key:",
      "  prefix: kernels",
      "",
    ].join("\n"),
  );
  return root;
}

/** One job: the restore step, the simulated workload (plain and autotuned kernels) with the hook in, the post step. */
async function job(root: string, name: string, sha: string) {
  const j = new RunnerJob(root, name, { ...PUSH, GITHUB_SHA: sha.repeat(40) }, ACTION);
  const restored = await j.uses("", {});
  expect(restored.code, restored.log).toBe(0);
  // An earlier step's kernel lines in the job's file, written before this restore began: not this job's.
  const telemetry = j.stepEnv().KCACHE_TELEMETRY_FILE as string;
  fs.appendFileSync(
    telemetry,
    `${JSON.stringify({ kernel: "before", cache_hit: false, compile_s: 99, t: 1 })}\n`,
  );
  const out = j.run("python3", [path.join(SIM, "workload.py"), "5", "2"], {
    PYTHONPATH: `${SIM}${path.delimiter}${j.stepEnv().PYTHONPATH}`,
    TRITON_SIM_COMPILE_MS: "1",
  });
  const run = JSON.parse(out.trim().split("\n").at(-1) as string) as { compiled: number; loaded: number };
  const [post] = await j.end();
  expect(post?.result?.code, post?.result?.log).toBe(0);
  return run;
}

describe("kcache stats for drop-in jobs with kcache's hook (the action's restore puts it in)", () => {
  it("counts the kernels the workloads loaded and compiled, not the cache entries, in JSON, text and HTML", async () => {
    const root = project();
    const cold = await job(root, "cold", "a");
    const warm = await job(root, "warm", "b");
    expect(cold.compiled).toBeGreaterThan(0);
    expect(warm.loaded).toBeGreaterThan(0);
    const env = { ...process.env, ...PUSH, GITHUB_ACTIONS: "true" };
    const stats = JSON.parse((await runCli(["stats", "--json"], { env, cwd: root })).stdout);
    const [week] = stats.weeks;
    expect(week).toMatchObject({
      prefix: "kernels",
      runs: 2,
      kernelsCompiled: cold.compiled + warm.compiled,
      kernelsLoaded: cold.loaded + warm.loaded,
      entries: null,
    });
    // The hook's compile seconds, and the kernel cost learnt from them.
    expect(week.entryCost.from).toBe("compile-times");
    const text = await runCli(["stats"], { env, cwd: root });
    expect(text.stdout).toContain(
      `| 2 | 2 | 0 / 1 / 1 | 50% | ${cold.compiled + warm.compiled} | ${cold.loaded + warm.loaded} |`,
    );
    const estimate = /^kernels: one kernel ≈ [\d.]+ s \(from the hook's compile times\).*$/m.exec(
      text.stdout,
    )?.[0];
    expect(estimate).toBeTruthy();
    // The page: every table the text has (working sets, weeks) and the line explaining the estimate.
    const html = path.join(root, "stats.html");
    expect((await runCli(["stats", "--html", html], { env, cwd: root })).code).toBe(0);
    const dom = dumpDom(html, root);
    expect(text.stdout).toContain("working sets of branch/main's newest keys");
    expect(dom).toContain("working sets of branch/main's newest keys");
    expect(dom).toMatch(/<table id="working-sets">[\s\S]*<td>kernels<\/td>/);
    expect(dom).toContain(
      `<td>kernels</td><td>${week.week}</td><td>2</td><td>2</td><td>0 / 1 / 1</td><td>50%</td><td>${cold.compiled + warm.compiled}</td><td>${cold.loaded + warm.loaded}</td>`,
    );
    expect(dom).toContain(estimate);
  });
});
