import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultBranchEntries } from "../faults/harness.js";
import { actionForTests, RunnerJob } from "../helpers/action-runner.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * The action as actions/cache users run it (restore in the step, save in the post step) on a
 * persistent self-hosted runner: one cache folder every job of the runner uses, without isolate. The
 * restore step puts kcache's hook on every job's PYTHONPATH, lazy or not, so the save can attribute
 * to the job what its own processes wrote: nothing else from a folder other jobs may write.
 */
const ACTION = actionForTests("action-hook");
const PUSH = { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" };

function project() {
  const root = tempDir("action-hook");
  const folder = path.join(root, "runner-cache");
  fs.writeFileSync(
    path.join(root, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      `    path: ${folder}`,
      "store:",
      `  path: ${path.join(root, "store")}`,
      "key:",
      "  prefix: kernels",
      "",
    ].join("\n"),
  );
  return { root, folder, store: path.join(root, "store") };
}

/** The simulated workload as a `run:` step that keeps what earlier steps put on PYTHONPATH (kcache's hook), or drops it. */
function workload(job: RunnerJob, prefix: string, keepHook = true) {
  const exported = job.stepEnv().PYTHONPATH;
  const out = job.run("python3", [path.join(SIM, "workload.py"), "3", "1", "--prefix", prefix], {
    PYTHONPATH: keepHook && exported ? `${SIM}${path.delimiter}${exported}` : SIM,
    TRITON_SIM_COMPILE_MS: "1",
  });
  return JSON.parse(out.trim().split("\n").at(-1) as string) as { compiled: number; written: string[] };
}

describe("the action's restore step installs kcache's hook for every job", () => {
  it("on a runner folder other jobs may write, the post step saves what the job's own steps wrote, and none of what a process outside the job wrote", async () => {
    const { root, folder, store } = project();
    // The runner's first job: the folder is new, every entry it makes is its own.
    const first = new RunnerJob(root, "first", { ...PUSH, GITHUB_SHA: "a".repeat(40) }, ACTION);
    const restored = await first.uses("", {});
    expect(restored.code, restored.log).toBe(0);
    expect(first.stepEnv().PYTHONPATH?.split(path.delimiter)[0]).toMatch(/python[/\\]kcache_hook$/);
    expect(first.stepEnv().KCACHE_TELEMETRY_FILE).toBeTruthy();
    const earlier = workload(first, "earlier");
    expect((await first.end())[0]?.result?.code).toBe(0);
    expect(defaultBranchEntries(store).sort()).toEqual([...earlier.written].sort());

    // The next default-branch job on the same runner folder, which now holds entries.
    const job = new RunnerJob(root, "second", { ...PUSH, GITHUB_SHA: "b".repeat(40) }, ACTION);
    const r = await job.uses("", {});
    expect(r.code, r.log).toBe(0);
    expect(r.log).toMatch(/other jobs may write it/);
    const telemetry = job.stepEnv().KCACHE_TELEMETRY_FILE as string;
    expect(fs.existsSync(telemetry)).toBe(true);
    // A process of another workflow on the runner, which never ran kcache, compiles into the folder meanwhile.
    const foreign = JSON.parse(
      execFileSync("python3", [path.join(SIM, "workload.py"), "4", "1", "--prefix", "foreign"], {
        env: {
          PATH: process.env.PATH,
          PYTHONPATH: SIM,
          TRITON_CACHE_DIR: folder,
          TRITON_SIM_COMPILE_MS: "1",
        },
      })
        .toString()
        .trim()
        .split("\n")
        .at(-1) as string,
    ) as { written: string[] };
    const mine = workload(job, "mine");
    // A step that sets PYTHONPATH without keeping $PYTHONPATH: its processes are invisible to the hook.
    const unseen = workload(job, "unseen", false);
    expect(mine.written.length).toBeGreaterThan(0);

    const [post] = await job.end();
    expect(post?.result?.code, post?.result?.log).toBe(0);
    const inKey = new Set(defaultBranchEntries(store));
    for (const e of mine.written) expect(inKey).toContain(e);
    for (const e of [...foreign.written, ...unseen.written]) expect(inKey).not.toContain(e);
    expect(post?.result?.log).toMatch(
      new RegExp(
        `left out ${foreign.written.length + unseen.written.length} entries .*kcache's hook did not record this job's processes writing`,
      ),
    );
  });
});
