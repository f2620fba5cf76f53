import { githubCommandLog } from "../../github/command-groups.js";
import { inOutFolder } from "../../pipeline/out-folder.js";
import { prewarm } from "../../pipeline/prewarm.js";
import { defaultOutDir } from "../../pipeline/run-profile.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, printJson } from "../setup.js";

export async function prewarmCommand(
  o: GlobalOptions & { profile: string; ifChanged?: string[]; out?: string; readOnly?: boolean },
) {
  const job = await commandJob(o, o.profile, true);
  const { ctx } = job;
  if (o.readOnly) ctx.readOnly.enter("--read-only");
  // A prewarm exists to fill the store: read-only, it runs nothing (the benchmark would be for naught).
  if (ctx.readOnly.why !== null) {
    const message = `read-only (${ctx.readOnly.why}): a prewarm fills the store; nothing run, nothing saved`;
    ctx.log.info(message);
    if (o.json) printJson({ outcome: "refused", key: ctx.key, matchedKey: null, message, run: null });
    return;
  }
  const held = { given: o.out !== undefined, cwd: job.cwd, log: ctx.log };
  const report = await inOutFolder(o.out ?? defaultOutDir(o.profile, job.env), held, (outDir) =>
    prewarm({
      job,
      outDir,
      ifChanged: o.ifChanged,
      echo: o.json ? process.stderr : process.stdout,
      commandLog: githubCommandLog(job.env, o.json ? process.stderr : process.stdout, job.ctx.log),
    }),
  );
  if (o.json) printJson(report);
  process.exitCode = report.run?.exitCode ?? 0;
}
