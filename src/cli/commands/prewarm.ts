import { prewarm } from "../../pipeline/prewarm.js";
import { defaultOutDir } from "../../pipeline/run-profile.js";
import { stderrProgress } from "../../progress.js";
import type { GlobalOptions } from "../options.js";
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
    outDir: o.out ?? defaultOutDir(o.profile, env),
    revision: o.revision,
    strict: o.strict,
    ifChanged: o.ifChanged,
    echo: o.json ? process.stderr : process.stdout,
    progress: stderrProgress,
  });
  if (o.json) printJson(report);
  process.exitCode = report.run?.exitCode ?? 0;
}
