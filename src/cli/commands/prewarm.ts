import { githubCommandLog } from "../../github/command-groups.js";
import { inOutFolder } from "../../pipeline/out-folder.js";
import { prewarm } from "../../pipeline/prewarm.js";
import { defaultOutDir } from "../../pipeline/run-profile.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, printJson } from "../setup.js";

export async function prewarmCommand(
  o: GlobalOptions & { profile: string; ifChanged?: string[]; out?: string },
) {
  const job = await commandJob(o, o.profile, true);
  const held = { given: o.out !== undefined, cwd: job.cwd, log: job.ctx.log };
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
