import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readState } from "../../../src/cache/local-state.js";
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
import { runSimWorkload } from "../../helpers/python-sim.js";
import {
  defaultBranchKey,
  hooked,
  jobOn,
  PR_ENV,
  persistentFolder,
  sorted,
} from "../../helpers/runner-jobs.js";
import { sandbox, tempDir } from "../../helpers/sandbox.js";

/*
 * Jobs at once on one runner folder without isolate: the default branch's and others' (a pull
 * request's job, a second workflow or script that never ran kcache), each with its own job process
 * (what a live-job marker is named for) and its own state, as on one self-hosted runner. A trusted
 * save on a folder that held entries before its job uploads only what it can attribute to its own
 * job: entries its processes wrote as the hook saw them (each file's digest), and the restored key's
 * entries, unchanged. Nothing another process can do to the folder (write, delete or rewrite its
 * marker, set times forward, overwrite the job's own files) gets anything into the default branch's key.
 */
describe("a trusted save on a runner folder other jobs may write (it held entries, no isolate or trust-local)", () => {
  it("a process that never ran kcache writes entries during the default branch's job: none reach its key; what the job's own processes wrote under the hook does", async () => {
    const sb = sandbox();
    const { folder, earlier } = await persistentFolder(sb);
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    // A second workflow, a script, a pull request's job without kcache: no marker, no record at all.
    const foreign = runSimWorkload(folder, { plain: 5, autotuned: 1, prefix: "foreign" });
    const mine = hooked(folder, { plain: 3, autotuned: 1, prefix: "mine" });
    expect(foreign.written.length).toBeGreaterThanOrEqual(8);

    const s = await save(main, { hook: mine.hook });
    const inKey = await defaultBranchKey(sb);
    for (const e of foreign.written) expect(inKey).not.toContain(e);
    expect(inKey).toEqual(sorted(earlier, mine.run.written));
    expect(s.leftOut.otherJobs.entries).toBe(foreign.written.length);
    expect(s.sharedFolder).toEqual({ caches: ["triton"], hook: true, attributed: mine.run.written.length });
    expect(s.entriesNew).toBe(mine.run.written.length);
  });

  it("without the hook nothing new is attributable: every new entry is left out, and one warning says how many and how to let them in", async () => {
    const sb = sandbox();
    const { folder, earlier } = await persistentFolder(sb);
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const foreign = runSimWorkload(folder, { plain: 5, autotuned: 1, prefix: "foreign" });
    const own = runSimWorkload(folder, { plain: 2, autotuned: 1, prefix: "mine" });

    const s = await save(main);
    expect(await defaultBranchKey(sb)).toEqual(sorted(earlier));
    expect(s.leftOut.otherJobs.entries).toBe(foreign.written.length + own.written.length);
    expect(s.sharedFolder).toEqual({ caches: ["triton"], hook: false, attributed: 0 });
    const warning = main.log.warnings.find((w) => w.includes("left out"));
    expect(warning).toMatch(
      new RegExp(
        `left out ${s.leftOut.otherJobs.entries} entries .*kcache run.*KCACHE_TELEMETRY_FILE=.*trust-local: true`,
      ),
    );
  });

  it.each([
    ["deletes its marker", (file: string) => fs.rmSync(file)],
    [
      "rewrites its marker as a trusted job's",
      (file: string) =>
        fs.writeFileSync(file, JSON.stringify({ startedAt: 0, isolated: true, trusted: true, endedAt: 1 })),
    ],
  ])("a pull request's job that %s gets none of its entries into the key", async (_, forge) => {
    const sb = sandbox();
    const { folder, earlier } = await persistentFolder(sb);
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2" });
    await restore(pr);
    const planted = runSimWorkload(folder, { plain: 5, autotuned: 1, prefix: "planted" });
    forge(path.join(folder, readState(pr.stateFile)?.job?.markers.triton as string));
    const mine = hooked(folder, { plain: 2, autotuned: 1, prefix: "mine" });

    const s = await save(main, { hook: mine.hook });
    const inKey = await defaultBranchKey(sb);
    for (const e of planted.written) expect(inKey).not.toContain(e);
    expect(inKey).toEqual(sorted(earlier, mine.run.written));
    expect(s.leftOut.otherJobs.entries).toBe(planted.written.length);
  });

  it("a pull request's job that sets its files' modification times forward, past its own end, gets none of its entries into the key", async () => {
    const sb = sandbox();
    const { folder, earlier } = await persistentFolder(sb);
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2" });
    await restore(pr);
    const planted = runSimWorkload(folder, { plain: 5, autotuned: 1, prefix: "planted" });
    await save(pr);
    await settleFolders(pr, { passed: true });
    const later = Date.now() / 1000 + 3600;
    for (const e of planted.written)
      for (const f of fs.readdirSync(path.join(folder, e)))
        fs.utimesSync(path.join(folder, e, f), later, later);

    const s = await save(main);
    const inKey = await defaultBranchKey(sb);
    for (const e of planted.written) expect(inKey).not.toContain(e);
    expect(inKey).toEqual(sorted(earlier));
    expect(s.leftOut.otherJobs.entries).toBe(planted.written.length);
  });

  it("under the hook, an entry the job's process wrote and a pull request's process then overwrote is left out; the job's others go up", async () => {
    const sb = sandbox();
    const { folder, earlier } = await persistentFolder(sb);
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2" });
    await restore(pr);
    const mine = hooked(folder, { plain: 3, autotuned: 1, prefix: "mine" });
    // The pull request's process rewrites every file of one kernel the default branch's job just
    // compiled, keeping it whole (its group file still names every file), as a compile of its own would.
    const victim = mine.run.written.find((e) =>
      fs.readdirSync(path.join(folder, e)).some((f) => f.startsWith("__grp__")),
    ) as string;
    const files = fs.readdirSync(path.join(folder, victim));
    expect(files.length).toBe(8);
    for (const f of files) {
      const file = path.join(folder, victim, f);
      const group = f.startsWith("__grp__") ? JSON.parse(fs.readFileSync(file, "utf8")) : null;
      fs.writeFileSync(file, group ? JSON.stringify(group, null, 1) : `poisoned ${f}\n`);
    }

    const s = await save(main, { hook: mine.hook });
    const fresh = path.join(tempDir("fresh"), "triton");
    const inKey = await defaultBranchKey(sb, fresh);
    expect(inKey).not.toContain(victim);
    expect(inKey).toEqual(
      sorted(
        earlier,
        mine.run.written.filter((e) => e !== victim),
      ),
    );
    const poisoned = inKey.flatMap((e) =>
      fs
        .readdirSync(path.join(fresh, e))
        .filter((f) => /poisoned/.test(fs.readFileSync(path.join(fresh, e, f), "utf8"))),
    );
    expect(poisoned).toEqual([]);
    expect(s.leftOut.otherJobs.entries).toBe(1);
    expect(s.sharedFolder?.attributed).toBe(mine.run.written.length - 1);
  });

  it("an entry the restore placed and a pull request changed through a shared hard link is not uploaded as the default branch's", async () => {
    const sb = sandbox();
    const { folder, earlier } = await persistentFolder(sb);
    const main = await jobOn(sb, folder, { rev: "3" });
    await restore(main);
    // A pull request isolated in a folder of its own, whose files are links of the runner's.
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2", isolate: true });
    const own = (await restore(pr)).caches[0]?.path as string;
    const victim = earlier.find((e) =>
      fs.readdirSync(path.join(own, e)).some((f) => f.startsWith("__grp__")),
    );
    const file = fs
      .readdirSync(path.join(own, victim as string))
      .find((f) => !f.startsWith("__grp__")) as string;
    fs.appendFileSync(path.join(own, victim as string, file), "\n// planted through the link\n");
    expect(fs.readFileSync(path.join(folder, victim as string, file), "utf8")).toMatch(/planted/);
    const mine = hooked(folder, { plain: 1, autotuned: 0, prefix: "mainnew" });

    const s = await save(main, { hook: mine.hook });
    expect(s.leftOut.otherJobs.entries).toBe(1);
    const fresh = path.join(tempDir("fresh"), "triton");
    expect(await defaultBranchKey(sb, fresh)).toContain(mine.run.written[0]);
    const restored = path.join(fresh, victim as string, file);
    expect(fs.existsSync(restored) ? fs.readFileSync(restored, "utf8") : "").not.toMatch(/planted/);
  });
});

describe("a folder no other job writes: every entry the job made is its own, without the hook", () => {
  it("a fresh folder (absent when the restore began): an ephemeral runner or a new container saves all it compiled", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const run = runSimWorkload(folder, { plain: 3, autotuned: 1 });
    const s = await save(main);
    expect(s.sharedFolder).toBeNull();
    expect(s.leftOut.otherJobs.entries).toBe(0);
    expect(s.entriesNew).toBe(run.written.length);
    expect(await defaultBranchKey(sb)).toEqual(sorted(run.written));
  });

  it("a fresh folder that an untrusted job's restore marked while the job ran is shared after all", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const main = await jobOn(sb, folder, { rev: "1" });
    await restore(main);
    const pr = await jobOn(sb, folder, { env: PR_ENV, rev: "2" });
    await restore(pr);
    const planted = runSimWorkload(folder, { plain: 3, autotuned: 1, prefix: "planted" });
    // A pull request's job killed with kill -9 still counts: its marker says it was there until found gone.
    pr.anchor.kill("SIGKILL");
    await new Promise((r) => pr.anchor.once("exit", r));
    expect(liveJobs(folder).filter((j) => !j.trusted)).toEqual([]);
    const mine = hooked(folder, { plain: 2, autotuned: 0, prefix: "mine" });
    const s = await save(main, { hook: mine.hook });
    const inKey = await defaultBranchKey(sb);
    for (const e of planted.written) expect(inKey).not.toContain(e);
    expect(inKey).toEqual(sorted(mine.run.written));
    expect(s.sharedFolder?.caches).toEqual(["triton"]);
  });

  it.each([
    ["trust-local: true (the runner runs only trusted jobs)", { trustLocal: true }],
    ["RUNNER_ENVIRONMENT=github-hosted (the CI says the machine runs this one job)", { ephemeral: true }],
    ["isolate: true (the job works in a folder of its own)", { isolate: true }],
  ])("%s: a folder that held entries is the job's own", async (_, how) => {
    const sb = sandbox();
    const { folder, earlier } = await persistentFolder(sb);
    const main = await jobOn(sb, folder, {
      rev: "1",
      ...("ephemeral" in how ? { env: { RUNNER_ENVIRONMENT: "github-hosted" } } : how),
    });
    const work = (await restore(main)).caches[0]?.path as string;
    const run = runSimWorkload(work, { plain: 2, autotuned: 1, prefix: "mine" });
    const s = await save(main);
    expect(s.sharedFolder).toBeNull();
    expect(s.leftOut.otherJobs.entries).toBe(0);
    expect(s.entriesNew).toBe(run.written.length);
    expect(await defaultBranchKey(sb)).toEqual(sorted(earlier, run.written));
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
