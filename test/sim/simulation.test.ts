import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type S3Sim, startS3Sim } from "./s3-world.js";
import { localStore, type SimResult, simulate } from "./simulation.js";

/*
 * The simulation within the npm-test budget (about a minute): a few random sequences of jobs, faults,
 * prunes and trims against one local store, from a fixed seed (CI is reproducible), every invariant
 * checked after every step. `npm run test:sim -- --runs N --seed S --seeds K` runs it long
 * (scripts/sim.mjs). A failure prints the shrunk sequence as a test that replays it.
 */
const SEED = Number(process.env.KCACHE_SIM_SEED ?? 49);
const SEEDS = Number(process.env.KCACHE_SIM_SEEDS ?? 1);
const RUNS = Number(process.env.KCACHE_SIM_RUNS ?? 4);
const STEPS = Number(process.env.KCACHE_SIM_STEPS ?? 6);
const REPORT = process.env.KCACHE_SIM_REPORT;
/** local, s3, or both (npm test: both, the S3 run shorter). */
const STORES = (process.env.KCACHE_SIM_STORE ?? "local,s3").split(",") as ("local" | "s3")[];

let s3: S3Sim | undefined;
beforeAll(async () => {
  if (STORES.includes("s3")) s3 = await startS3Sim();
});
afterAll(async () => {
  await s3?.stop();
});

const results: ({ seed: number; store: string; seconds: number } & SimResult)[] = [];

describe("the simulation: many jobs against one store, under faults", () => {
  const cases = STORES.flatMap((store) =>
    Array.from({ length: SEEDS }, (_, i) => [store, SEED + i] as const),
  );
  it.each(cases)(
    `on a %s store, ${RUNS} random sequences of up to ${STEPS} steps from seed %i: every invariant holds after every step`,
    async (store, seed) => {
      const t0 = Date.now();
      // npm test's S3 runs are half as many: each starts more processes than a local store's.
      const runs = store === "s3" && !process.env.KCACHE_SIM_RUNS ? Math.ceil(RUNS / 2) : RUNS;
      const r = await simulate({
        seed,
        runs,
        maxSteps: STEPS,
        store: store === "s3" ? () => (s3 as S3Sim).spec() : localStore,
        storeKind: store,
      });
      results.push({ seed, store, seconds: (Date.now() - t0) / 1000, ...r });
      if (REPORT) {
        const commit = execFileSync("git", ["rev-parse", "HEAD"]).toString().trim();
        const date = new Date().toISOString().slice(0, 10);
        fs.writeFileSync(
          REPORT,
          `${JSON.stringify({ runs: RUNS, steps: STEPS, commit, date, results }, null, 2)}\n`,
        );
      }
      if (r.failed) console.error(`${r.message}\n\nThe shrunk sequence, as a test:\n\n${r.test}\n`);
      expect(r.failed ? r.message : null).toBeNull();
      expect(r.runs).toBeGreaterThanOrEqual(runs);
    },
  );
});
