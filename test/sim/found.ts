import type { Beside, JobStep, Step } from "./steps.js";

/*
 * What the simulation found while it was built, each as the shrunk sequence it printed: every one
 * violated an invariant on the kcache it was found on (RELIABILITY.md, "The simulation", lists them
 * and what was fixed). found.test.ts replays each in a fresh world.
 */
const job = (over: Partial<JobStep>): JobStep => ({
  step: "job",
  trust: "main",
  runner: "A",
  mode: "drop-in",
  lazy: false,
  live: false,
  pr: 1,
  push: false,
  beside: [],
  kill: null,
  ...over,
});
const beside = (...b: Beside[]) => b;

export const FOUND: [string, Step[]][] = [
  [
    "a process that never ran kcache compiles into the runner's folder during a default-branch job",
    [job({ beside: beside("evil-compiles") })],
  ],
  ["the same, its files dated an hour ahead", [job({ beside: beside("evil-dated-ahead") })]],
  [
    "a pull request's whole job (restore, compiles, save) on the same folder during a default-branch job",
    [job({ beside: beside("pr-job") })],
  ],
  [
    "another process overwrites, in place, files of an entry the default-branch job compiled",
    [job({ beside: beside("poison") })],
  ],
  [
    "GitHub's variables of a push to main and GitLab's of a fork's merge request at once",
    [job({ trust: "two-cis" })],
  ],
  [
    "a job's process sends kcache's lookup socket lines no hook sends (null, numbers, 70 kB)",
    [job({ mode: "run", live: true, beside: beside("hostile-lines") })],
  ],
  [
    "a job's process reports, for live sharing, an entry folder that is a symlink out of the cache",
    [job({ mode: "run", live: true, runner: "fresh", beside: beside("symlinks") })],
  ],
  [
    "a FIFO where a live record lies, then a job that looks entries up live",
    [
      job({ mode: "run", live: true, runner: "fresh" }),
      { step: "fault", fault: "fifo-live-record", pick: 0 },
      { step: "fault", fault: "delete-manifest", pick: 0 },
      job({ mode: "run", live: true, runner: "fresh" }),
    ],
  ],
  [
    "with isolate, another process overwrites in place a runner's file the job's folder links (long run, seed 108)",
    [job({ runner: "B", beside: beside("poison") })],
  ],
  [
    "under store.live, another process overwrites in place files of an entry the job compiled, before it is shared (long run a, seed 203; run c, seed 504)",
    [job({ mode: "run", live: true, beside: beside("poison") })],
  ],
  [
    "a default-branch job's restore killed before it recorded anything, a pull request's job beside it on a self-hosted runner (long run b, seeds 400 and 406)",
    [job({ beside: beside("pr-job"), kill: { phase: "restore", ms: 50 } })],
  ],
  [
    "a pack truncated in the store, then a default-branch job whose restore is killed before it verified anything: its save reused the damaged pack by reference (long run e, seed 713)",
    [
      job({ mode: "run" }),
      { step: "fault", fault: "truncate-pack", pick: 0 },
      job({}),
      job({ push: true, kill: { phase: "restore", ms: 50 } }),
    ],
  ],
];

/** Found on an S3 store (Ceph's RADOS Gateway, which honours conditional writes). */
export const FOUND_ON_S3: [string, Step[]][] = [
  [
    "a manifest PUT whose answer is lost after the server stored it, then a fresh runner's job",
    // Found with the first job on runner A; since a save there keeps only what kcache's hook attributes
    // to the job (none in a drop-in job here), it saved nothing and made no PUT. On a fresh runner it
    // saves all it compiled, and the second job restores that key at another path (I4's relocation).
    [job({ runner: "fresh", net: "lose-manifest-answer" }), job({ runner: "fresh" })],
  ],
];
