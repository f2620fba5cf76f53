import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../src/pipeline/run-profile.js";
import { relatimeFolder, tempRecordsReads } from "../helpers/atime.js";
import { runCli } from "../helpers/cli.js";
import { canMountTmpfs, mountTmpfs } from "../helpers/tmpfs.js";

const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

/** A project whose job runs the simulated Triton on $PLAIN kernels; keys drop what one save did not use. */
function project() {
  const dir = relatimeFolder("kcache-usage") as string;
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  path: ${path.join(dir, "store")}\nkey:\n  prefix: sim\nsave:\n  keep-unused: { runs: 1 }\nprofiles:\n  bench:\n    env:\n      PYTHONPATH: ${SIM}\n      TRITON_SIM_COMPILE_MS: "1"\n    commands:\n      - name: workload\n        run: python3 ${SIM}/workload.py $PLAIN 0 && exit $EXIT\n`,
  );
  let n = 0;
  /** One run on a fresh runner at its own revision and path, using `plain` kernels. */
  const run = async (plain: number, opts: { root?: string; exit?: number } = {}) => {
    n++;
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: dir,
      PLAIN: String(plain),
      EXIT: String(opts.exit ?? 0),
      CACHE_ROOT: path.join(opts.root ?? dir, `cache-${n}`),
      KCACHE_STATE_DIR: path.join(dir, `state-${n}`),
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: String(n).repeat(40).slice(0, 40),
      RUNNER_TEMP: path.join(dir, `temp-${n}`),
    };
    const r = await runCli(["run", "--profile", "bench"], { env, cwd: dir });
    const report = JSON.parse(
      fs.readFileSync(path.join(dir, `temp-${n}`, "kcache", "bench", "kcache-report.json"), "utf8"),
    ) as RunReport;
    return { code: r.code, report };
  };
  return { dir, run };
}

describe.skipIf(!tempRecordsReads && !canMountTmpfs)("kcache run records which kernels the job used", () => {
  it("learns use from the hook and access times together, and evicts the kernels a job stopped using", async () => {
    const p = project();
    const cold = await p.run(4);
    expect(cold.report.save?.outcome).toBe("saved");
    const warm = await p.run(2);
    expect(warm.report.kernels.compiled).toBe(0);
    // Two kernels and the launcher only they needed (workload.py builds one per signature i % 3).
    expect(warm.report.save?.usage).toMatchObject({ source: "atime+hook", evicted: { entries: 3 } });
    // The key now holds what the job loads: the next run restores only that.
    const next = await p.run(2);
    expect(next.report.restore?.entriesRestored).toBe(warm.report.save?.usage.live.entries);
    expect(next.report.kernels.compiled).toBe(0);
  });

  it("a run whose command failed saves nothing, so it evicts nothing", async () => {
    const p = project();
    await p.run(4);
    const failed = await p.run(1, { exit: 1 });
    expect(failed.code).not.toBe(0);
    expect(failed.report.save).toBeNull();
    const after = await p.run(4);
    expect(after.report.kernels.compiled).toBe(0);
  });

  it.skipIf(!canMountTmpfs)("on a noatime runner the hook alone says what was used", async () => {
    const p = project();
    const noatime = path.join(p.dir, "noatime");
    mountTmpfs(noatime, "32m", "noatime");
    await p.run(4, { root: noatime });
    const warm = await p.run(3, { root: noatime });
    expect(warm.report.restore?.usage.atime).toBe(false);
    expect(warm.report.save?.usage).toMatchObject({ source: "hook", evicted: { entries: 1 } });
  });
});
