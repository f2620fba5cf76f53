import fs from "node:fs";
import path from "node:path";
import { checkAnnotations, runOutputs, writeOutputs, writeStepSummary } from "../../github/outputs.js";
import { defaultOutDir, runProfile } from "../../pipeline/run-profile.js";
import { stderrProgress } from "../../progress.js";
import { runMarkdown } from "../../report/run-markdown.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, printJson } from "../setup.js";

export async function runCommandCli(
  o: GlobalOptions & { profile: string; out?: string; restore: boolean; save: boolean },
) {
  const { config, log } = commandBasics(o);
  const env = process.env;
  const outDir = o.out ?? defaultOutDir(o.profile, env);
  const report = await runProfile({
    config,
    profileName: o.profile,
    log,
    outDir,
    revision: o.revision,
    strict: o.strict,
    restore: o.restore,
    save: o.save,
    // With --json, stdout carries only the report; command output still reaches the log files and stderr.
    echo: o.json ? process.stderr : process.stdout,
    progress: stderrProgress,
  });
  const file = path.join(report.outDir, "kcache-report.json");
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  const markdown = runMarkdown(report);
  if (o.json) printJson(report);
  else process.stdout.write(`\n${markdown}`);
  // With --json, stdout carries only the report: annotations go to stderr, which the runner reads too.
  const annotate = o.json ? process.stderr : process.stdout;
  if (env.GITHUB_ACTIONS === "true")
    for (const a of checkAnnotations(report, process.cwd())) annotate.write(`${a}\n`);
  writeStepSummary(env, markdown);
  writeOutputs(env, runOutputs(report));
  log.info(`report: ${file}`);
  process.exitCode = report.exitCode;
}
