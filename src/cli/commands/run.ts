import { githubCommandLog } from "../../github/command-groups.js";
import { publishRun } from "../../github/outputs.js";
import { inOutFolder } from "../../pipeline/out-folder.js";
import { defaultOutDir, runProfile } from "../../pipeline/run-profile.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, printJson } from "../setup.js";

export async function runCommandCli(
  o: GlobalOptions & { profile: string; out?: string; restore: boolean; save: boolean; readOnly?: boolean },
) {
  const job = await commandJob(o, o.profile, true);
  // Read-only (store/read-only.ts): the save stage says one line instead of saving.
  if (o.readOnly) job.ctx.readOnly.enter("--read-only");
  const held = { given: o.out !== undefined, cwd: job.cwd, log: job.ctx.log };
  // The folder is held until the report is written in it: a run beside this one writes its own.
  await inOutFolder(o.out ?? defaultOutDir(o.profile, job.env), held, async (outDir) => {
    const report = await runProfile({
      job,
      outDir,
      restore: o.restore,
      save: o.save,
      // With --json, stdout carries only the report; command output still reaches the log files and stderr.
      echo: o.json ? process.stderr : process.stdout,
      commandLog: githubCommandLog(job.env, o.json ? process.stderr : process.stdout, job.ctx.log),
    });
    // With --json, stdout carries only the report: annotations go to stderr, which the runner reads too.
    const file = publishRun(report, job.env, {
      markdownTo: o.json ? null : process.stdout,
      annotations: o.json ? "stderr" : "stdout",
      cwd: job.cwd,
    });
    if (o.json) printJson(report);
    job.ctx.log.info(`report: ${file}`);
    process.exitCode = report.exitCode;
  });
}
