import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JobContext } from "../../../src/cache/job-context.js";
import {
  LIVE_JOB,
  liveJobs,
  markJob,
  UNTRUSTED_KEPT_MS,
  unmarkJob,
  untrustedJobsSince,
} from "../../../src/cache/persistent/live-jobs.js";
import { settleFolders } from "../../../src/cache/persistent/settle.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import type { HookUsage } from "../../../src/cache/usage/save-usage.js";
import { telemetryEnv } from "../../../src/telemetry/hook.js";
import { readTelemetry } from "../../../src/telemetry/read.js";
import { entryNames } from "../../helpers/entry-compare.js";
import { runSimWorkload } from "../../helpers/python-sim.js";
import { type Sandbox, sandbox, tempDir } from "../../helpers/sandbox.js";

/*
 * Two jobs at once on one runner folder: a pull request's and the default branch's, each with its own
 * job process (what a live-job marker is named for) and its own state, as two CI jobs on one
 * self-hosted runner are. The default branch's save may upload only what its own job made.
 */
const PR_ENV = { GITHUB_REF: "refs/pull/7/merge", GITHUB_EVENT_NAME: "pull_request" };

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

function plain(sb: Sandbox, folder: string, isolate = false) {
  return sb.config({
    caches: [{ name: "triton", kind: "triton", path: folder, ...(isolate ? { isolate: true } : {}) }],
    store: { path: sb.store },
    key: { prefix: "bench" },
  });
}

async function jobOn(
  sb: Sandbox,
  folder: string,
  opts: { env?: NodeJS.ProcessEnv; rev: string; isolate?: boolean },
): Promise<JobContext & { anchor: ChildProcess }> {
  const anchor = jobProcess();
  const ctx = await sb.context({
    config: plain(sb, folder, opts.isolate),
    env: opts.env ?? {},
    revision: opts.rev.repeat(40),
    stateDir: path.join(sb.dir, `state-${opts.rev}`),
  });
  return { ...ctx, jobPid: anchor.pid as number, anchor };
}

/** The simulated workload with kcache's hook in, and what the hook saw: a `kcache run` command's view. */
function hooked(folder: string, opts: Parameters<typeof runSimWorkload>[1]) {
  const file = path.join(tempDir("telemetry"), "t.jsonl");
  const run = runSimWorkload(folder, { ...opts, env: telemetryEnv({}, file) });
  const t = readTelemetry(file);
  const hook: HookUsage = { complete: t.usageComplete, dirs: t.usedFolders, wrote: t.wroteFolders };
  return { run, hook };
}

/** Entry names of every key saved under the default branch's scope in a local store. */
function defaultBranchKeys(sb: Sandbox): Promise<string[]> {
  return (async () => {
    const fresh = path.join(tempDir("fresh"), "triton");
    await restore(
      await sb.context({ config: plain(sb, fresh), revision: "f".repeat(40), stateDir: tempDir("s") }),
    );
    return entryNames(fresh);
  })();
}

const pause = () => new Promise((r) => setTimeout(r, 2_100));

describe("a default-branch job and a pull request's job at once on one runner folder", () => {
  it("without the hook: entries made while the pull request's job was live are left out, and the report says so", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    // The default branch's job compiles its first kernels alone in the folder.
    const early = runSimWorkload(folder, { plain: 3, autotuned: 1, prefix: "mainearly" });
    await pause(); // beyond the window's slack: these are clearly the job's own
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2" });
    await restore(pr);
    const planted = runSimWorkload(folder, { plain: 5, autotuned: 1, prefix: "planted" });
    const late = runSimWorkload(folder, { plain: 2, autotuned: 0, prefix: "mainlate" });
    await save(pr);
    await settleFolders(pr, { passed: true });

    const s = await save(main);
    expect(s.outcome).toBe("saved");
    expect(s.besideUntrusted).toEqual({ jobs: 1, by: "time" });
    const inKey = await defaultBranchKeys(sb);
    for (const e of planted.written) expect(inKey).not.toContain(e);
    expect(inKey).toEqual([...early.written].sort());
    // What the default branch's job made while the pull request's was live: nobody can tell whose it is.
    expect(s.leftOut.otherJobs.entries).toBe(planted.written.length + late.written.length);
    expect(s.entriesNew).toBe(early.written.length);
  });

  it("with the hook: the entries its own processes wrote are uploaded, none of the pull request's, its autotune winners among them", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const main = await jobOn(sb, folder, { rev: "1" });
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2" });
    await restore(main);
    await restore(pr);
    // The pull request's job tunes the shared kernels first; the default branch's loads its winners
    // and compiles its own.
    const planted = runSimWorkload(folder, { plain: 4, autotuned: 2, prefix: "chunk" });
    const own = hooked(folder, { plain: 4, autotuned: 2, prefix: "chunk" });
    const mine = hooked(folder, { plain: 3, autotuned: 1, prefix: "mainonly" });
    expect(own.run.compiled).toBe(0); // every shared kernel and winner came from the pull request's job
    expect(own.hook.complete).toBe(true);

    const hook: HookUsage = {
      complete: own.hook.complete && mine.hook.complete,
      dirs: [...own.hook.dirs, ...mine.hook.dirs],
      wrote: [...(own.hook.wrote ?? []), ...(mine.hook.wrote ?? [])],
    };
    const s = await save(main, { hook });
    expect(s.besideUntrusted).toEqual({ jobs: 1, by: "hook" });
    const inKey = await defaultBranchKeys(sb);
    for (const e of planted.written) expect(inKey).not.toContain(e);
    expect(inKey).toEqual([...mine.run.written].sort());
    expect(s.leftOut.otherJobs.entries).toBe(planted.written.length);
  });

  it("a pull request's job killed with kill -9 still counts: its marker says it was there until it was found gone", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2" });
    await restore(pr);
    const planted = runSimWorkload(folder, { plain: 3, autotuned: 1, prefix: "planted" });
    pr.anchor.kill("SIGKILL");
    await new Promise((r) => pr.anchor.once("exit", r));
    // A restore on the runner meanwhile finds the marker stale.
    expect(liveJobs(folder).filter((j) => !j.trusted)).toEqual([]);
    const s = await save(main);
    const inKey = await defaultBranchKeys(sb);
    for (const e of planted.written) expect(inKey).not.toContain(e);
    expect(s.leftOut.otherJobs.entries).toBe(planted.written.length);
  });

  it("an entry the restore placed and a pull request changed through a shared hard link is not uploaded as the default branch's", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    // A key on the default branch, restored by a default-branch job on this runner.
    const first = await jobOn(sb, folder, { rev: "1" });
    await restore(first);
    const key = runSimWorkload(folder, { plain: 3, autotuned: 0 });
    await save(first);
    await settleFolders(first, { passed: true });

    const main = await jobOn(sb, folder, { rev: "3" });
    await restore(main);
    // A pull request isolated in a folder of its own, whose files are links of the runner's.
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2", isolate: true });
    const own = (await restore(pr)).caches[0]?.path as string;
    const victim = key.written[0] as string;
    const file = fs.readdirSync(path.join(own, victim)).find((f) => !f.startsWith("__grp__")) as string;
    fs.appendFileSync(path.join(own, victim, file), "\n// planted through the link\n");
    expect(fs.readFileSync(path.join(folder, victim, file), "utf8")).toMatch(/planted/);
    runSimWorkload(folder, { plain: 1, autotuned: 0, prefix: "mainnew" });

    const s = await save(main);
    expect(s.leftOut.otherJobs.entries).toBe(1);
    const fresh = path.join(tempDir("fresh"), "triton");
    await restore(
      await sb.context({ config: plain(sb, fresh), revision: "3".repeat(40), stateDir: tempDir("s") }),
    );
    expect(
      fs.existsSync(path.join(fresh, victim, file))
        ? fs.readFileSync(path.join(fresh, victim, file), "utf8")
        : "",
    ).not.toMatch(/planted/);
  });

  it("a job that ran beside none keeps everything, as before", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const run = runSimWorkload(folder, { plain: 3, autotuned: 1 });
    // A pull request's job that ended before this one began: its entries were the restore's "local".
    const s = await save(main);
    expect(s.besideUntrusted).toBeNull();
    expect(s.leftOut.otherJobs.entries).toBe(0);
    expect(s.entriesNew).toBe(run.written.length);
  });
});

describe("live-job markers", () => {
  it("an untrusted job's marker outlives its job, saying when it ended; a trusted job's goes", () => {
    const root = tempDir("markers");
    const t = markJob(root, process.pid, { isolated: false, trusted: true });
    const u = markJob(root, process.pid, { isolated: false, trusted: false }, Date.now() - 5_000);
    expect(
      liveJobs(root)
        .map((j) => j.marker)
        .sort(),
    ).toEqual([t, u].sort());
    unmarkJob(root, t);
    unmarkJob(root, u);
    expect(fs.existsSync(path.join(root, t))).toBe(false);
    expect(liveJobs(root)).toEqual([]);
    const [ended] = untrustedJobsSince(root, Date.now() - 1_000);
    expect(ended?.marker).toBe(u);
    expect(ended?.endedAt).toBeGreaterThan(Date.now() - 1_000);
    // A job that began after it ended did not run beside it.
    expect(untrustedJobsSince(root, Date.now() + 1_000)).toEqual([]);
    // Long after, the marker goes.
    expect(untrustedJobsSince(root, 0, undefined, Date.now() + UNTRUSTED_KEPT_MS + 60_000)).toEqual([]);
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it("a marker that cannot be read, or one from a kcache before trust was recorded, counts as an untrusted job", () => {
    const root = tempDir("markers");
    const name = `${LIVE_JOB.prefix}${"0".repeat(12)}-1-abcdef`;
    fs.writeFileSync(path.join(root, name), "{ not json");
    fs.writeFileSync(path.join(root, `${name}0`), JSON.stringify({ startedAt: Date.now(), isolated: false }));
    expect(untrustedJobsSince(root, Date.now() - 60_000)).toHaveLength(2);
  });
});
