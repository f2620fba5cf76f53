import path from "node:path";
import { prewarm } from "../../pipeline/prewarm.js";
import { DEFAULT_PROGRESS, transferProgress } from "../../report/progress.js";
import type { GlobalOptions } from "../main.js";
import { commandBasics, printJson } from "../setup.js";

export async function prewarmCommand(
  o: GlobalOptions & { profile: string; ifChanged?: string[]; out?: string },
) {
  const { config, log } = commandBasics(o);
  const env = process.env;
  const report = await prewarm({
    config,
    profileName: o.profile,
    log,
    outDir:
      o.out ??
      (env.RUNNER_TEMP ? path.join(env.RUNNER_TEMP, "kcache", o.profile) : path.join(".kcache", o.profile)),
    revision: o.revision,
    strict: o.strict,
    ifChanged: o.ifChanged,
    echo: o.json ? process.stderr : process.stdout,
    progress: (label, total) =>
      transferProgress(label, total, { ...DEFAULT_PROGRESS, stream: process.stderr }),
  });
  if (o.json) printJson(report);
  process.exitCode = report.run?.exitCode ?? 0;
}
