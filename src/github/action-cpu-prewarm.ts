import os from "node:os";
import * as core from "@actions/core";
import { UsageError } from "../errors.js";
import type { Job } from "../job/build-job.js";
import { cpuPrewarmOf } from "../pipeline/cpu-prewarm/cpu-prewarm.js";
import { Inputs, Outputs } from "./io-names.js";
import { setOutputs, writeStepSummary } from "./outputs.js";

/** How long the compile workers may run, as `kcache prewarm --cpu` allows them by default. */
const WORKERS_TIMEOUT_MS = 60 * 60_000;

/** The `workers` input: compile processes at once; the runner's CPU count when not given. */
export function workersInput(): number {
  const given = core.getInput(Inputs.workers);
  const n = given === "" ? Math.max(1, os.availableParallelism()) : Number(given);
  if (!Number.isInteger(n) || n < 1 || n > 256)
    throw new UsageError(`input ${Inputs.workers}: "${given}" is not a whole number from 1 to 256`);
  return n;
}

/**
 * Mode prewarm with `cpu: true`: `kcache prewarm --cpu` (docs/cpu-prewarm.md) in a pull request's job
 * on a CPU runner, the job's Python stack installed: the GPU job's newest key with a compile plan is
 * restored, the kernels whose source changed compiled with no GPU, and saved into the pull request's
 * scope under the key its GPU job restores. Outputs: `prewarm` (ran, no-plan or refused: a trusted
 * scope, or read-only), `cache-primary-key` (the key saved for the GPU job), `cache-matched-key`
 * (the key it built on), `saved`. A worker that touched CUDA fails the step.
 */
export async function cpuPrewarmStep(job: Job): Promise<void> {
  const workers = workersInput();
  const { ctx } = job;
  if (ctx.readOnly.why !== null) {
    ctx.log.info(
      `read-only (${ctx.readOnly.why}): a CPU prewarm exists to save what it compiles; nothing compiled`,
    );
    setOutputs({ [Outputs.prewarm]: "refused", [Outputs.saved]: "false" });
    return;
  }
  const report = await cpuPrewarmOf(job, { workers, timeoutMs: WORKERS_TIMEOUT_MS });
  setOutputs({
    [Outputs.prewarm]: report.outcome,
    [Outputs.primaryKey]: report.key ?? "",
    [Outputs.matchedKey]: report.base ?? "",
    [Outputs.saved]: String(report.saved !== null),
  });
  writeStepSummary(job.env, `### kcache prewarm --cpu ${job.profile?.name ?? ""}\n\n${report.message}\n`);
  if (report.touchedCuda)
    core.setFailed("kcache prewarm --cpu: a compile worker created a CUDA context; a CPU prewarm must not");
}
