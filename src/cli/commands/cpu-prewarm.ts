import os from "node:os";
import { UsageError } from "../../errors.js";
import { cpuPrewarmOf } from "../../pipeline/cpu-prewarm/cpu-prewarm.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, durationOption, printJson } from "../setup.js";

/** `kcache prewarm --cpu`: the pull request's changed kernels compiled with no GPU (cpu-prewarm/). */
export async function cpuPrewarmCommand(
  o: GlobalOptions & { profile: string; workers?: string; timeout?: string; readOnly?: boolean },
) {
  const workers = o.workers === undefined ? Math.max(1, os.availableParallelism()) : Number(o.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256)
    throw new UsageError(`--workers ${o.workers}: use a whole number from 1 to 256`);
  const timeoutMs = o.timeout === undefined ? 60 * 60_000 : durationOption(o.timeout, "--timeout");
  if (timeoutMs <= 0) throw new UsageError(`--timeout ${o.timeout}: give the workers some time, like 30m`);
  const job = await commandJob(o, o.profile, true);
  const { ctx } = job;
  if (o.readOnly) ctx.readOnly.enter("--read-only");
  if (ctx.readOnly.why !== null) {
    const message = `read-only (${ctx.readOnly.why}): a CPU prewarm exists to save what it compiles; nothing compiled`;
    ctx.log.info(message);
    if (o.json) printJson({ outcome: "refused", message });
    return;
  }
  const report = await cpuPrewarmOf(job, { workers, timeoutMs });
  if (o.json) printJson(report);
  // A worker that made a CUDA context broke the promise of a GPU-free prewarm: say so by the exit code.
  process.exitCode = report.touchedCuda ? 1 : 0;
}
