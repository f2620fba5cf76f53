import fs from "node:fs";
import path from "node:path";
import { hostEnvironment } from "../../environment.js";
import { UsageError } from "../../errors.js";
import { workflowStep } from "../../github/workflow-step.js";
import { generateWorkflows } from "../../github/workflows.js";
import type { GlobalOptions } from "../options.js";
import { commandBasics, printJson } from "../setup.js";

export async function workflowCommand(
  o: GlobalOptions & {
    profile: string[];
    out: string;
    utc?: boolean;
    jitter?: boolean;
    check?: boolean;
    seed?: string;
    step?: boolean;
  },
) {
  const { config, log } = commandBasics(o);
  const configPath =
    path.relative(process.cwd(), config.source === "(defaults)" ? "kcache.yml" : config.source) ||
    "kcache.yml";
  if (o.step) {
    if (o.check) throw new UsageError("--step prints a step and --check compares files: give one of them");
    const steps = o.profile.map((p) => workflowStep(config, p, configPath));
    if (o.json) printJson({ steps: o.profile.map((profile, i) => ({ profile, step: steps[i] })) });
    else process.stdout.write(steps.join("\n"));
    return;
  }
  const stale: string[] = [];
  /** What happened to each file, for --json. */
  const files: { profile: string; file: string; status: "wrote" | "unchanged" | "current" | "stale" }[] = [];
  for (const profile of o.profile) {
    for (const w of generateWorkflows(config, profile, {
      configPath,
      utc: o.utc,
      jitter: o.jitter,
      seed: o.seed ?? hostEnvironment().GITHUB_REPOSITORY ?? path.basename(process.cwd()),
    })) {
      const file = path.join(o.out, w.file);
      const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
      if (o.check) {
        if (current !== w.text) stale.push(file);
        files.push({ profile, file, status: current === w.text ? "current" : "stale" });
        continue;
      }
      fs.mkdirSync(o.out, { recursive: true });
      fs.writeFileSync(file, w.text);
      const status = current === w.text ? "unchanged" : "wrote";
      files.push({ profile, file, status });
      log.info(`${status} ${file}`);
    }
  }
  if (o.json) printJson({ files });
  if (stale.length)
    throw new UsageError(
      `out of date with ${configPath}: ${stale.join(", ")}; run kcache workflow without --check`,
    );
}
