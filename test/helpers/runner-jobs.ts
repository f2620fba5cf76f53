import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterEach, expect } from "vitest";
import type { JobContext } from "../../src/cache/job-context.js";
import { settleFolders } from "../../src/cache/persistent/settle.js";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import type { HookUsage } from "../../src/cache/usage/save-usage.js";
import { telemetryEnv } from "../../src/telemetry/hook.js";
import { readTelemetry } from "../../src/telemetry/read.js";
import { entryNames } from "./entry-compare.js";
import { runSimWorkload } from "./python-sim.js";
import { type Sandbox, tempDir } from "./sandbox.js";

/*
 * Jobs at once on one runner folder, as on one self-hosted runner: the default branch's and others'
 * (a pull request's job, a second workflow or script that never ran kcache), each with its own job
 * process (what a live-job marker is named for) and, unless a test says otherwise, its own state.
 */
export const PR_ENV = { GITHUB_REF: "refs/pull/7/merge", GITHUB_EVENT_NAME: "pull_request" };

const anchors: ChildProcess[] = [];
afterEach(() => {
  for (const a of anchors.splice(0)) a.kill("SIGKILL");
});

/** A process that stands for a CI job while it lives (a job's shell). */
function jobProcess(): ChildProcess {
  const p = spawn("sleep", ["600"], { stdio: "ignore" });
  anchors.push(p);
  return p;
}

function plain(sb: Sandbox, folder: string, opts: { isolate?: boolean; trustLocal?: boolean } = {}) {
  return sb.config({
    caches: [
      {
        name: "triton",
        kind: "triton",
        path: folder,
        ...(opts.isolate ? { isolate: true } : {}),
        ...(opts.trustLocal ? { "trust-local": true } : {}),
      },
    ],
    store: { path: sb.store },
    key: { prefix: "bench" },
  });
}

/** A job on `folder` at revision `rev`; its state in a folder of its own unless `stateDir` names one. */
export async function jobOn(
  sb: Sandbox,
  folder: string,
  opts: { env?: NodeJS.ProcessEnv; rev: string; isolate?: boolean; trustLocal?: boolean; stateDir?: string },
): Promise<JobContext & { anchor: ChildProcess }> {
  const anchor = jobProcess();
  const ctx = await sb.context({
    config: plain(sb, folder, opts),
    env: opts.env ?? {},
    revision: opts.rev.repeat(40),
    stateDir: opts.stateDir ?? path.join(sb.dir, `state-${opts.rev}`),
  });
  return { ...ctx, jobPid: anchor.pid as number, anchor };
}

/** The simulated workload with kcache's hook in, and what the hook saw: a `kcache run` command's view. */
export function hooked(folder: string, opts: Parameters<typeof runSimWorkload>[1]) {
  const file = path.join(tempDir("telemetry"), "t.jsonl");
  const run = runSimWorkload(folder, { ...opts, env: telemetryEnv({}, file) });
  const t = readTelemetry(file);
  const hook: HookUsage = {
    complete: t.usageComplete,
    dirs: t.usedFolders,
    wrote: t.wroteFolders,
    written: t.wroteFiles,
  };
  return { run, hook };
}

/** Entry names of every key saved under the default branch's scope in a local store, restored into `fresh`. */
export async function defaultBranchKey(
  sb: Sandbox,
  fresh = path.join(tempDir("fresh"), "triton"),
): Promise<string[]> {
  await restore(
    await sb.context({ config: plain(sb, fresh), revision: "f".repeat(40), stateDir: tempDir("s") }),
  );
  return entryNames(fresh);
}

/** A persistent runner's folder: an earlier default-branch job compiled and saved in it, and ended. */
export async function persistentFolder(sb: Sandbox): Promise<{ folder: string; earlier: string[] }> {
  const folder = path.join(sb.dir, "triton");
  const first = await jobOn(sb, folder, { rev: "0" });
  await restore(first);
  const run = runSimWorkload(folder, { plain: 3, autotuned: 0, prefix: "earlier" });
  expect((await save(first)).outcome).toBe("saved");
  await settleFolders(first, { passed: true });
  return { folder, earlier: run.written };
}

export const sorted = (...lists: string[][]) => lists.flat().sort();
