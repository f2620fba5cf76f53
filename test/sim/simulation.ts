import fc from "fast-check";
import type { NetFault } from "./s3-world.js";
import { type Beside, type JobStep, runStep, type Sim, type Step } from "./steps.js";
import { type StoreSpec, World } from "./world.js";

/**
 * The simulation as fast-check's model-based testing runs it: a sequence of steps (jobs of every
 * kind, store faults, prunes, trims), each checked against the invariants (oracle.ts) right after it
 * ran; a violation fails the sequence, which fast-check shrinks to a minimal one. Every step is a
 * plain record, so the shrunk sequence prints as a test that replays it (`replayTest`).
 */
/**
 * Kinds of steps left out of a run ($KCACHE_SIM_WITHOUT, comma-separated: beside kinds, fault kinds,
 * trusts): to look past a failure already known while its fix is under way.
 */
/** KCACHE_SIM_TRACE=1: each step and its time on stderr (to find a step that hangs). */
const TRACE = process.env.KCACHE_SIM_TRACE === "1";
const WITHOUT = new Set((process.env.KCACHE_SIM_WITHOUT ?? "").split(",").filter(Boolean));
const allowed = <T extends string>(xs: T[]): T[] => xs.filter((x) => !WITHOUT.has(x));

const BESIDE: Beside[] = allowed([
  "evil-compiles",
  "evil-dated-ahead",
  "poison",
  "symlinks",
  "fifo",
  "pr-job",
  "hostile-lines",
  "delete-markers",
]);

const jobFields = {
  step: fc.constant("job" as const),
  trust: fc.constantFrom(
    ...allowed(["main", "main", "main", "pr", "fork", "unplaced", "two-cis"] as const as unknown as string[]),
  ),
  runner: fc.constantFrom("A", "A", "B", "fresh"),
  mode: fc.constantFrom("drop-in", "run"),
  lazy: fc.boolean(),
  live: fc.boolean(),
  pr: fc.integer({ min: 1, max: 3 }),
  push: fc.boolean(),
  beside: fc
    .subarray(BESIDE, { maxLength: 3 })
    .chain((b) => (b.length ? fc.constant(b) : fc.constant([] as Beside[]))),
  kill: fc.option(
    fc.record({ phase: fc.constantFrom("restore", "save", "run"), ms: fc.integer({ min: 50, max: 1500 }) }),
    { freq: 6, nil: null },
  ),
};
const NET: NetFault[] = allowed([
  "lose-manifest-answer",
  "reset-pack-get",
  "server-errors",
  "stall-pack-get",
  "drop",
]);

/**
 * Other jobs' processes share a runner's folder only where the runner keeps it (A, B): an ephemeral
 * runner (GitHub-hosted, a container per job) runs this job alone. The job's own processes (its
 * socket lines, the links and FIFOs it makes) act anywhere.
 */
const FOREIGN: Beside[] = ["evil-compiles", "evil-dated-ahead", "poison", "pr-job", "delete-markers"];
const alone = (j: JobStep): JobStep =>
  j.runner === "fresh" ? { ...j, beside: j.beside.filter((b) => !FOREIGN.includes(b)) } : j;

/** A job; on S3, with the network's and the server's failures as well. */
const jobStep = (store: "local" | "s3"): fc.Arbitrary<JobStep> =>
  (store === "local"
    ? fc.record(jobFields)
    : fc.record({ ...jobFields, net: fc.option(fc.constantFrom(...NET), { freq: 2, nil: null }) })
  ).map((j) => alone(j as JobStep));

const stepArb = (store: "local" | "s3"): fc.Arbitrary<Step> =>
  fc.oneof(
    { weight: 8, arbitrary: jobStep(store) },
    {
      weight: 2,
      arbitrary: fc.record({
        step: fc.constant("fault" as const),
        fault: fc.constantFrom(
          ...allowed([
            "delete-pack",
            "truncate-pack",
            "fifo-pack",
            "delete-live-pack",
            "fifo-live-record",
            "garbage-live-record",
            "fifo-state",
            "devzero-state",
            "garbage-manifest",
            "delete-manifest",
          ]),
        ),
        pick: fc.nat({ max: 50 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ step: fc.constant("prune" as const), keep: fc.integer({ min: 1, max: 3 }) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        step: fc.constant("trim" as const),
        runner: fc.constantFrom("A" as const, "B" as const),
        maxKb: fc.integer({ min: 100, max: 2000 }),
      }),
    },
  );

/** A command of fast-check's model-based testing: one step, then the invariants. */
class StepCommand implements fc.AsyncCommand<object, Sim> {
  constructor(readonly step: Step) {}
  check(): boolean {
    return true;
  }
  async run(_m: object, sim: Sim): Promise<void> {
    const t0 = Date.now();
    if (TRACE) console.error(`[sim] run ${sim.ran.length + 1}: ${JSON.stringify(this.step)}`);
    await runStep(sim, this.step);
    if (TRACE) console.error(`[sim]   done in ${Date.now() - t0} ms`);
    if (sim.world.violations.length) throw new InvariantViolation(sim.world.violations);
  }
  toString(): string {
    return JSON.stringify(this.step);
  }
}

export class InvariantViolation extends Error {
  constructor(readonly violations: string[]) {
    super(`invariants violated:\n  ${violations.join("\n  ")}`);
  }
}

/** Runs a sequence of steps in a fresh world; the violations found (empty: all held). */
export async function replay(steps: Step[], store: StoreSpec, seed = 0): Promise<string[]> {
  const world = new World(seed, store);
  const sim: Sim = { world, damage: new Map(), jobs: 0, ran: [] };
  try {
    for (const s of steps) {
      await runStep(sim, s);
      if (world.violations.length) break;
    }
    return [...world.violations];
  } finally {
    if (TRACE) traceWorld(world);
    world.dispose();
  }
}

/** What a replayed world did, each command with its exit and its stderr's last lines (KCACHE_SIM_TRACE=1). */
function traceWorld(world: World): void {
  for (const h of world.history) console.error(`[sim] ${h}`);
  for (const r of world.runs) {
    console.error(`[sim] kcache ${r.args.join(" ")} -> ${r.signal ?? r.code} in ${r.ms} ms`);
    for (const line of r.stderr.trim().split("\n").slice(-8)) console.error(`[sim]     ${line}`);
  }
}

/** A local store, a folder of each world's own. */
export const localStore = (): StoreSpec => ({ kind: "local" });

export interface SimOptions {
  seed: number;
  runs: number;
  maxSteps: number;
  /** The store: local (a folder in each world) or S3 (made by the caller). */
  store: () => StoreSpec;
  storeKind: "local" | "s3";
  /** Stop exploring (and shrinking) after this long. */
  timeLimitMs?: number;
}

export interface SimResult {
  runs: number;
  failed: boolean;
  /** The shrunk failing sequence, as a test ready to paste, when one failed. */
  test: string | null;
  message: string | null;
}

/** Runs `runs` random sequences from `seed`; a failure is shrunk and printed as a test. */
export async function simulate(opts: SimOptions): Promise<SimResult> {
  let runs = 0;
  // The steps of the last sequence that failed: fast-check's counterexample, once it has shrunk it
  // (every later candidate passed). Recorded here, since its wrappers of the commands are its own.
  let lastFailing: Step[] = [];
  const property = fc.asyncProperty(
    fc.commands([stepArb(opts.storeKind).map((s) => new StepCommand(s))], { maxCommands: opts.maxSteps }),
    async (cmds) => {
      runs++;
      const world = new World(opts.seed, opts.store());
      const sim: Sim = { world, damage: new Map(), jobs: 0, ran: [] };
      try {
        await fc.asyncModelRun(() => ({ model: {}, real: sim }), cmds);
      } catch (e) {
        lastFailing = sim.ran;
        throw e;
      } finally {
        world.dispose();
      }
    },
  );
  const r = await fc.check(property, {
    seed: opts.seed,
    numRuns: opts.runs,
    ...(opts.timeLimitMs ? { interruptAfterTimeLimit: opts.timeLimitMs } : {}),
  });
  if (!r.failed) return { runs, failed: false, test: null, message: null };
  const steps = lastFailing;
  return {
    runs,
    failed: true,
    test: replayTest(opts.seed, steps, opts.storeKind),
    message: (r.errorInstance as Error | undefined)?.message ?? "the property failed",
  };
}

/** A failing sequence as a vitest test that replays it (paste into test/sim/found.test.ts). */
export function replayTest(seed: number, steps: Step[], store: "local" | "s3" = "local"): string {
  return [
    `it("simulation seed ${seed}: ${steps.length} steps", async () => {`,
    "  const violations = await replay(",
    `    ${JSON.stringify(steps, null, 2).split("\n").join("\n    ")},`,
    `    ${store === "s3" ? "s3.spec()" : "localStore()"},`,
    "  );",
    "  expect(violations).toEqual([]);",
    "});",
  ].join("\n");
}
