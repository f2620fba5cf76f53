#!/usr/bin/env node
// The simulation run long: `npm run test:sim -- --runs N --seed S [--seeds K] [--steps M] [--store local|s3]
// [--without kinds] [--out file.json]`. Runs N random sequences from each of K seeds (S, S+1, ...),
// every invariant checked after every step (test/sim/), and writes what ran and what was found as
// JSON when --out is given. A failure prints its shrunk sequence as a ready test.
import { spawn } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";

const ROOT = path.resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "100" },
    seed: { type: "string", default: String(Date.now() % 100000) },
    seeds: { type: "string", default: "1" },
    steps: { type: "string", default: "8" },
    store: { type: "string", default: "local" },
    without: { type: "string", default: "" },
    out: { type: "string" },
  },
});
const env = {
  ...process.env,
  KCACHE_SIM_RUNS: values.runs,
  KCACHE_SIM_SEED: values.seed,
  KCACHE_SIM_SEEDS: values.seeds,
  KCACHE_SIM_STEPS: values.steps,
  KCACHE_SIM_STORE: values.store,
  KCACHE_SIM_WITHOUT: values.without,
  ...(values.out ? { KCACHE_SIM_REPORT: path.resolve(values.out) } : {}),
};
const child = spawn(
  process.execPath,
  [
    path.join(ROOT, "node_modules/vitest/vitest.mjs"),
    "run",
    "test/sim/simulation.test.ts",
    "--testTimeout=0",
  ],
  { cwd: ROOT, env, stdio: "inherit" },
);
child.on("close", (code) => process.exit(code ?? 1));
