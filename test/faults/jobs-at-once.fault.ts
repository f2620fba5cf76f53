import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { BIN } from "../helpers/cli.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";
import { defaultBranchEntries, Tally } from "./harness.js";

/*
 * Two CI jobs at once on one runner folder, without isolate: a pull request's and a default-branch
 * push's, each its own shell (as two runner services on one machine run them), coordinated by files
 * so that the pull request compiles, and tunes the kernels the default branch's job then loads, while
 * the default branch's job runs. Half the trials as a workflow's steps (kcache restore, the workload,
 * kcache save: no hook), half under `kcache run` (the hook records what the job's processes write);
 * in some the pull request's job is still running when the default branch saves. The first trial is
 * a new runner (the folder absent: the pull request's marker makes it shared); the others a runner
 * an earlier default-branch job left entries on, and in the last three the pull request's job works
 * against kcache's records: it deletes every live-job marker and sets its files' times an hour
 * forward. None of what the pull request's job wrote may be in a key the default branch restores:
 * kernels and autotune winners.
 */
const TRIALS = 6;

function project(dir: string) {
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:",
      '  - { name: triton, kind: triton, path: "${TRITON_CACHE_DIR}" }',
      'store: { path: "${STORE}" }',
      "key: { prefix: runner }",
      "profiles:",
      "  job:",
      "    commands:",
      '      - { name: work, run: "bash ${JOB_DIR}/work.sh" }',
      "",
    ].join("\n"),
  );
}

/** Waits for a file (the other job's signal). */
const waitFor = (f: string) => `for i in $(seq 1 600); do [ -e ${f} ] && break; sleep 0.05; done`;

/** The simulated Triton writing to the runner's folder; its record of what it wrote goes to `out`. */
const sim = (args: string, prefix: string, out: string) =>
  `TRITON_SIM_COMPILE_MS=2 PYTHONPATH=$PYTHONPATH:${SIM} python3 ${SIM}/workload.py ${args} --prefix ${prefix} > ${out}`;

/** Sets the mtimes of every file of the entries the pull request's sim runs wrote an hour forward. */
const timesForward = (folder: string, jobDir: string) =>
  `python3 -c 'import json,os,sys,glob,time
t = time.time() + 3600
for f in glob.glob(sys.argv[2] + "/sim-*.json"):
    for e in json.load(open(f))["written"]:
        d = os.path.join(sys.argv[1], e)
        for n in os.listdir(d): os.utime(os.path.join(d, n), (t, t))' ${folder} ${jobDir}`;

function jobScripts(
  dir: string,
  pr: boolean,
  opts: { prLingers: boolean; forges: boolean; folder: string },
): string {
  const signals = path.join(dir, "signals");
  const jobDir = path.join(dir, pr ? "pr" : "main");
  const work = pr
    ? [
        waitFor(`${signals}/main-started`),
        // The pull request tunes the kernels the default branch's job is about to load, and plants its own.
        sim("3 2", "chunk", `${jobDir}/sim-chunk.json`),
        sim("4 1", "planted", `${jobDir}/sim-planted.json`),
        // Against kcache's records: no marker says it was here, and its files say they were made later.
        opts.forges ? `rm -f ${opts.folder}/.kcache-live-*` : ":",
        opts.forges ? timesForward(opts.folder, jobDir) : ":",
        `touch ${signals}/pr-compiled`,
        opts.prLingers ? waitFor(`${signals}/main-saved`) : ":",
      ]
    : [
        sim("2 0", "mainearly", `${jobDir}/sim-early.json`),
        `touch ${signals}/main-started`,
        waitFor(`${signals}/pr-compiled`),
        sim("3 2", "chunk", `${jobDir}/sim-chunk.json`),
        sim("2 1", "mainlate", `${jobDir}/sim-late.json`),
      ];
  fs.writeFileSync(path.join(jobDir, "work.sh"), `${work.join("\n")}\n`);
  return jobDir;
}

/** An earlier default-branch job on the runner: it compiled and saved, and left its entries in the folder. */
function seedScripts(dir: string): string {
  const jobDir = path.join(dir, "seed");
  fs.writeFileSync(path.join(jobDir, "work.sh"), `${sim("2 1", "seed", `${jobDir}/sim-seed.json`)}\n`);
  return jobDir;
}

function runJob(jobDir: string, env: NodeJS.ProcessEnv, underRun: boolean, after: string[]) {
  const kcache = (cmd: string) =>
    `"${process.execPath}" "${BIN}" ${cmd} --json > ${jobDir}/${cmd.split(" ")[0]}.json 2> ${jobDir}/${cmd.split(" ")[0]}.err; echo $? >> ${jobDir}/codes`;
  const script = underRun
    ? [kcache("run -p job"), ...after]
    : [kcache("restore"), `bash ${jobDir}/work.sh`, kcache("save"), ...after];
  const t0 = performance.now();
  const shell = spawn("bash", ["-c", script.join("\n")], {
    env: { ...env, JOB_DIR: jobDir, KCACHE_STATE_DIR: path.join(jobDir, "state") },
    // Each job in a checkout of its own, as each runner service has its own work folder.
    cwd: jobDir,
    stdio: "ignore",
  });
  return new Promise<{ codes: number[]; seconds: number }>((resolve) =>
    shell.on("close", () =>
      resolve({
        codes: fs
          .readFileSync(path.join(jobDir, "codes"), "utf8")
          .trim()
          .split("\n")
          .filter(Boolean)
          .map(Number),
        seconds: (performance.now() - t0) / 1000,
      }),
    ),
  );
}

/** What a job's kcache commands wrote to stderr, for a failure's message. */
const errors = (jobDir: string) =>
  ["run", "restore", "save"]
    .filter((c) => fs.existsSync(`${jobDir}/${c}.err`))
    .map((c) => fs.readFileSync(`${jobDir}/${c}.err`, "utf8"))
    .join("\n");

const written = (jobDir: string) =>
  fs
    .readdirSync(jobDir)
    .filter((f) => f.startsWith("sim-"))
    .flatMap(
      (f) => (JSON.parse(fs.readFileSync(path.join(jobDir, f), "utf8")) as { written: string[] }).written,
    );

describe("two jobs at once on one runner folder", () => {
  it(`a pull request's job beside a default-branch job, without isolate, ${TRIALS} times: none of its kernels or winners in the default branch's keys`, async () => {
    const tally = new Tally("pull-request job beside a default-branch job on one runner folder, no isolate");
    const kept = { own: 0, leftOut: 0 };
    for (let t = 0; t < TRIALS; t++) {
      const underRun = t % 2 === 1;
      const prLingers = t % 3 !== 2;
      const seeded = t !== 0;
      const forges = t >= 3;
      const dir = tempDir("at-once");
      const folder = path.join(dir, "home", ".triton", "cache");
      for (const d of ["signals", "pr", "main", "seed"]) fs.mkdirSync(path.join(dir, d));
      const base = (pr: boolean, sha = pr ? "2" : "1"): NodeJS.ProcessEnv => {
        const payload = path.join(dir, pr ? "pr-event.json" : "main-event.json");
        fs.writeFileSync(
          payload,
          JSON.stringify(
            pr ? { number: 7, pull_request: { number: 7 } } : { repository: { default_branch: "main" } },
          ),
        );
        return {
          PATH: process.env.PATH,
          HOME: path.join(dir, "home"),
          PYTHONPATH: installedStack(),
          TRITON_CACHE_DIR: folder,
          STORE: path.join(dir, "store"),
          GITHUB_SHA: sha.repeat(40),
          GITHUB_REF: pr ? "refs/pull/7/merge" : "refs/heads/main",
          GITHUB_EVENT_NAME: pr ? "pull_request" : "push",
          GITHUB_EVENT_PATH: payload,
        };
      };
      const mainDir = jobScripts(dir, false, { prLingers, forges, folder });
      const prDir = jobScripts(dir, true, { prLingers, forges, folder });
      const seedDir = seedScripts(dir);
      for (const d of [mainDir, prDir, seedDir]) project(d);
      if (seeded)
        expect((await runJob(seedDir, base(false, "0"), false, [])).codes, errors(seedDir)).toEqual([0, 0]);
      const signals = path.join(dir, "signals");
      const main = runJob(mainDir, base(false), underRun, [`touch ${signals}/main-saved`]);
      const pr = runJob(prDir, base(true), underRun, []);
      const [m, p] = await Promise.all([main, pr]);
      for (const r of [m, p])
        for (const code of r.codes) tally.run({ code, seconds: r.seconds, peakRssMb: null });
      tally.row.trials++;
      // Each job's kcache lines all exit 0: kcache run alone, or restore and save.
      for (const [r, d] of [
        [m, mainDir],
        [p, prDir],
      ] as const)
        expect(r.codes, errors(d)).toEqual(underRun ? [0] : [0, 0]);
      const theirs = new Set(written(prDir));
      const ours = new Set([...written(mainDir), ...written(seedDir)]);
      const inDefault = defaultBranchEntries(path.join(dir, "store"));
      tally.row.foreignInDefault += inDefault.filter((e) => theirs.has(e) && !ours.has(e)).length;
      const save = JSON.parse(
        fs.readFileSync(path.join(mainDir, underRun ? "run.json" : "save.json"), "utf8"),
      );
      const report = underRun ? save.save : save;
      kept.own += report.entriesNew;
      kept.leftOut += report.leftOut.otherJobs.entries;
      // The folder is one other jobs write: under kcache run the hook's record attributes the job's own.
      expect(report.sharedFolder?.hook, JSON.stringify(report.sharedFolder)).toBe(underRun);
    }
    tally.save();
    expect(tally.row.foreignInDefault).toBe(0);
    // The default branch's jobs still upload what they can tell is theirs (under kcache run).
    expect(kept.own).toBeGreaterThan(0);
    expect(kept.leftOut).toBeGreaterThan(0);
  });
});
