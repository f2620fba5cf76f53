import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tritonKind } from "../../src/kinds/triton.js";
import { installedStack } from "../fixtures/installed-stack.js";
import { BIN } from "../helpers/cli.js";
import { rssProbe } from "../helpers/measured-cli.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";
import { defaultBranchEntries, filesOutside, Tally } from "./harness.js";

/**
 * A persistent self-hosted runner over 20 jobs on one cache folder, as FLA's H100 runner is used:
 * default-branch pushes and pull requests interleaved, a store that starts empty, one pull request
 * that compiles a kernel marked as planted, a job killed with kill -9 halfway through its compiles,
 * and a stack change (a new Triton) halfway. Each job is a shell, as a runner's job is: restore,
 * the workload (the simulated Triton, whose own record says which entries it wrote), save.
 */
const MAX_SIZE = 5_000_000;
const JOBS = 20;
const PLANTED_JOB = 6;
const KILLED_JOB = 8;
const STACK_CHANGE = 10;

interface JobOutcome {
  killed: boolean;
  written: string[];
  restore: { entriesBefore: number } | null;
  save: {
    folders: { trim: { after: { entries: number; bytes: number }; removed: { entries: number } } | null }[];
  } | null;
  codes: number[];
  peakRssMb: number | null;
  seconds: number;
}

function runnerProject(isolate: boolean) {
  const dir = tempDir(`kcache-runner-${isolate ? "iso" : "plain"}`);
  const folder = path.join(dir, "home", ".triton", "cache");
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      "    path: ${TRITON_CACHE_DIR}",
      `    isolate: ${isolate}`,
      `    max-size: ${MAX_SIZE}`,
      "store:\n  path: ${STORE}",
      "key:\n  prefix: runner",
      "stack:\n  pins:\n    image: ${IMAGE}",
      "",
    ].join("\n"),
  );
  return { dir, folder, store: path.join(dir, "store") };
}

/** The job's shell script: what a workflow's steps run on the runner. */
function jobScript(jobDir: string, prefixes: string[], slow: boolean): string {
  const kcache = (cmd: string) =>
    `KCACHE_TEST_RSS_FILE=${jobDir}/rss-${cmd} NODE_OPTIONS="--require ${rssProbe()}" "${process.execPath}" "${BIN}" ${cmd} --json > ${jobDir}/${cmd}.json; echo $? >> ${jobDir}/codes`;
  const sims = prefixes.map(
    (p, i) =>
      // The job to be killed compiles a dozen new kernels slowly: it dies in the middle of them.
      `PYTHONPATH=${SIM} TRITON_SIM_COMPILE_MS=${slow ? 400 : 2} python3 ${SIM}/workload.py ${i === 0 ? "6 2" : slow ? "12 2" : "1 0"} --prefix ${p} > ${jobDir}/sim-${i}.json`,
  );
  return [
    `: > ${jobDir}/github-env`,
    kcache("restore"),
    `set -a; . ${jobDir}/github-env; set +a`,
    ...sims,
    kcache("save"),
  ].join("\n");
}

/** Entry folders of a cache folder (kcache's private names and Triton's temp folders left out). */
function entries(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root).filter((n) => !n.startsWith(".kcache-") && !n.startsWith("tmp."));
}

function complete(root: string, name: string): boolean {
  const files = fs
    .readdirSync(path.join(root, name))
    .map((rel) => ({ rel, size: 0, mtimeMs: 0, atimeMs: 0, ino: 0 }));
  return tritonKind.incompleteReason(root, { name, files }) === null;
}

function entryBytes(root: string): number {
  let n = 0;
  for (const e of entries(root))
    for (const f of fs.readdirSync(path.join(root, e), { withFileTypes: true }))
      if (f.isFile() && !/^lock$|\.lock$/.test(f.name)) n += fs.statSync(path.join(root, e, f.name)).size;
  return n;
}

async function runJob(
  p: ReturnType<typeof runnerProject>,
  j: number,
  env: NodeJS.ProcessEnv,
  prefixes: string[],
  kill: boolean,
): Promise<JobOutcome> {
  const jobDir = path.join(p.dir, `job-${j}`);
  fs.mkdirSync(jobDir);
  const t0 = performance.now();
  const shell = spawn("bash", ["-c", jobScript(jobDir, prefixes, kill)], {
    env: {
      ...env,
      GITHUB_ENV: path.join(jobDir, "github-env"),
      KCACHE_STATE_DIR: path.join(jobDir, "state"),
    },
    cwd: p.dir,
    detached: true,
    stdio: "ignore",
  });
  const closed = new Promise((r) => shell.on("close", r));
  if (kill) {
    // Killed with everything it started once its compiles are under way.
    const started = () =>
      fs.existsSync(path.join(jobDir, "restore.json")) &&
      fs.statSync(path.join(jobDir, "restore.json")).size > 0;
    for (let i = 0; i < 400 && !started(); i++) await new Promise((r) => setTimeout(r, 25));
    await new Promise((r) => setTimeout(r, 900));
    expect(shell.exitCode, "the job to kill was still running").toBeNull();
    process.kill(-(shell.pid as number), "SIGKILL");
  }
  await closed;
  const read = <T>(f: string): T | null => {
    try {
      return JSON.parse(fs.readFileSync(path.join(jobDir, f), "utf8")) as T;
    } catch {
      return null;
    }
  };
  const rss = ["restore", "save"]
    .map(
      (c) =>
        Number(
          fs.existsSync(path.join(jobDir, `rss-${c}`))
            ? fs.readFileSync(path.join(jobDir, `rss-${c}`), "utf8")
            : NaN,
        ) / 1024,
    )
    .filter(Number.isFinite);
  return {
    killed: kill,
    written: prefixes.flatMap((_, i) => read<{ written: string[] }>(`sim-${i}.json`)?.written ?? []),
    restore: read("restore.json"),
    save: read("save.json"),
    codes: fs.existsSync(path.join(jobDir, "codes"))
      ? fs.readFileSync(path.join(jobDir, "codes"), "utf8").trim().split("\n").filter(Boolean).map(Number)
      : [],
    peakRssMb: rss.length ? Math.max(...rss) : null,
    seconds: (performance.now() - t0) / 1000,
  };
}

async function playRunner(isolate: boolean) {
  const p = runnerProject(isolate);
  const tally = new Tally(
    `persistent runner: ${JOBS} jobs, pull requests interleaved, kill -9, a stack change${isolate ? ", isolate" : ""}`,
  );
  const planted: string[] = [];
  const found = { colder: 0, plantedInFolder: 0, overSize: 0, halfMerged: 0, reportsOff: 0 };
  const killedCompiles = new Set<string>();
  let trimmed = 0;
  for (let j = 1; j <= JOBS; j++) {
    const pr = j % 2 === 0;
    const payload = path.join(p.dir, `event-${j}.json`);
    fs.writeFileSync(
      payload,
      JSON.stringify(
        pr
          ? { number: 100 + j, pull_request: { number: 100 + j } }
          : { repository: { default_branch: "main" } },
      ),
    );
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: path.join(p.dir, "home"),
      PYTHONPATH: installedStack(),
      TRITON_CACHE_DIR: p.folder,
      STORE: p.store,
      IMAGE: j >= STACK_CHANGE ? "v2" : "v1",
      TRITON_SIM_LINE: j >= STACK_CHANGE ? "3.7" : "3.6",
      GITHUB_SHA: j.toString(16).padStart(40, "0"),
      GITHUB_REF: pr ? `refs/pull/${100 + j}/merge` : "refs/heads/main",
      GITHUB_EVENT_NAME: pr ? "pull_request" : "push",
      GITHUB_EVENT_PATH: payload,
    };
    const before = new Set(entries(p.folder));
    const completeBefore = [...before].filter((n) => complete(p.folder, n)).length;
    const prefixes = ["chunk", j === PLANTED_JOB ? "planted" : pr ? `pr${j}` : `edit${j}`];
    const out = await runJob(p, j, env, prefixes, j === KILLED_JOB);
    if (j === PLANTED_JOB) planted.push(...out.written.filter((w) => !before.has(w)));
    for (const c of out.codes) tally.run({ code: c, seconds: out.seconds, peakRssMb: out.peakRssMb });
    if (out.killed) tally.run({ code: null, seconds: out.seconds, peakRssMb: null });
    tally.row.trials++;
    // Never colder: nothing the folder held before the job was compiled again.
    if (out.written.some((w) => before.has(w))) found.colder++;
    const now = entries(p.folder);
    if (isolate) found.plantedInFolder += planted.filter((e) => now.includes(e)).length;
    // Without isolate a killed compile leaves what Triton leaves (files without their group file), in
    // the folder itself; Triton compiles such an entry again. Nothing else may be incomplete.
    if (out.killed && !isolate) for (const n of now) if (!complete(p.folder, n)) killedCompiles.add(n);
    found.halfMerged += now.filter((n) => !complete(p.folder, n) && !killedCompiles.has(n)).length;
    if (isolate || !out.killed) if (entryBytes(p.folder) > MAX_SIZE) found.overSize++;
    if (out.restore && out.restore.entriesBefore !== (isolate ? completeBefore : before.size))
      found.reportsOff++;
    const trim = out.save?.folders[0]?.trim;
    trimmed += trim?.removed.entries ?? 0;
    if (trim && (trim.after.bytes !== entryBytes(p.folder) || trim.after.entries !== now.length))
      found.reportsOff++;
  }
  tally.row.foreignInDefault = defaultBranchEntries(p.store).filter((e) => planted.includes(e)).length;
  tally.row.writesOutside = filesOutside(p.dir, [
    "home",
    "store",
    "kcache.yml",
    ...Array.from({ length: JOBS }, (_, i) => [`job-${i + 1}`, `event-${i + 1}.json`]).flat(),
  ]).length;
  return { p, tally, planted, found, trimmed };
}

describe("a persistent runner shared by pull requests", () => {
  for (const isolate of [false, true]) {
    it(`20 jobs${isolate ? " with isolate" : ""}: never colder, no pull request's kernel in the default branch's keys${isolate ? " or the runner's folder" : ""}, bounded`, async () => {
      const { tally, planted, found, p, trimmed } = await playRunner(isolate);
      expect(planted.length).toBeGreaterThan(0);
      expect(trimmed, "max-size made trims remove entries").toBeGreaterThan(0);
      expect(found).toEqual({ colder: 0, plantedInFolder: 0, overSize: 0, halfMerged: 0, reportsOff: 0 });
      expect(tally.row.foreignInDefault).toBe(0);
      expect(tally.row.writesOutside).toBe(0);
      // The killed job's own folder went at the next restore; nothing else of kcache's is left.
      expect(fs.readdirSync(p.folder).filter((n) => /^\.kcache-(job|restore|trash)-/.test(n))).toEqual([]);
      // The default branch's keys hold what its jobs compiled: the runner is warm for the next one.
      expect(defaultBranchEntries(p.store).length).toBeGreaterThan(0);
      tally.save();
    });
  }
});
