import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { keyRecorded } from "../cache/save/save-report.js";
import { hostEnvironment } from "../environment.js";
import { commandData, noWorkflowCommands } from "../log.js";
import type { RunReport } from "../pipeline/run-profile.js";
import { runMarkdown } from "../report/run-markdown.js";
import { appendFileCommand } from "./file-commands.js";
import { Outputs } from "./io-names.js";

/**
 * Sets step outputs in $GITHUB_OUTPUT as @actions/core does (each value between random delimiters);
 * nothing outside a runner. Written here rather than through @actions/core, whose HTTP client loads
 * undici, which compiles its WebAssembly parser as it loads: under a memory limit (ulimit -v) that
 * alone ended `kcache run`, which makes no HTTP request on a local store.
 */
export function setOutputs(values: Record<string, string>, env: NodeJS.ProcessEnv = hostEnvironment()): void {
  if (!env.GITHUB_OUTPUT) return;
  const text = Object.entries(values)
    .map(([name, value]) => {
      let delimiter = `ghadelimiter_${randomUUID()}`;
      while (name.includes(delimiter) || value.includes(delimiter))
        delimiter = `ghadelimiter_${randomUUID()}`;
      return `${name}<<${delimiter}\n${value}\n${delimiter}\n`;
    })
    .join("");
  appendFileCommand(env.GITHUB_OUTPUT, text, "the step's outputs");
}

/** Appends Markdown to the job's summary page when $GITHUB_STEP_SUMMARY is set. */
export function writeStepSummary(env: NodeJS.ProcessEnv, markdown: string): void {
  if (env.GITHUB_STEP_SUMMARY) appendFileCommand(env.GITHUB_STEP_SUMMARY, `${markdown}\n`, "the job summary");
}

/** A failed check as an annotation on its result file. */
export interface Annotation {
  level: "error" | "warning";
  title: string;
  message: string;
  file?: string;
}

export function checkAnnotations(r: RunReport, cwd: string): Annotation[] {
  return r.checks
    .filter((c) => !c.passed)
    .map((c) => ({
      level: c.severity === "error" ? "error" : "warning",
      title: `kcache check ${c.name}`,
      message: c.message,
      ...(c.file ? { file: path.relative(cwd, c.file) || c.file } : {}),
    }));
}

/** The outputs of a run. */
export function runOutputs(r: RunReport, reportFile: string): Record<string, string> {
  return {
    [Outputs.cacheHit]: String(Boolean(r.restore?.cacheHit)),
    [Outputs.primaryKey]: r.key,
    [Outputs.matchedKey]: r.restore?.matchedKey ?? "",
    [Outputs.kernelsCompiled]: String(r.kernels.compiled),
    [Outputs.kernelsLoaded]: r.kernels.loaded === null ? "" : String(r.kernels.loaded),
    [Outputs.saved]: String(keyRecorded(r.save?.outcome)),
    [Outputs.report]: reportFile,
  };
}

/**
 * What the CLI's `kcache run` and the action's run mode both do with a finished run: kcache-report.json
 * in its folder, the Markdown (to `markdownTo`, and to the step summary), step outputs, and on a
 * runner an annotation per failed check, a workflow command on stdout; with `annotations: "stderr"`
 * (the CLI's --json, whose stdout is the report) on stderr, which the runner reads too. Returns the
 * report file's path.
 */
export function publishRun(
  report: RunReport,
  env: NodeJS.ProcessEnv,
  opts: { markdownTo: NodeJS.WritableStream | null; annotations: "stdout" | "stderr"; cwd?: string },
): string {
  const file = path.join(report.outDir, "kcache-report.json");
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  const markdown = runMarkdown(report);
  // Its cells quote result files a job wrote: no line of it may be a workflow command.
  opts.markdownTo?.write(`\n${noWorkflowCommands(markdown)}`);
  writeStepSummary(env, markdown);
  setOutputs(runOutputs(report, file), env);
  if (env.GITHUB_ACTIONS === "true") {
    for (const a of checkAnnotations(report, opts.cwd ?? process.cwd())) {
      (opts.annotations === "stderr" ? process.stderr : process.stdout).write(`${workflowCommand(a)}\n`);
    }
  }
  return file;
}

/** `::error file=…,title=…::message`, escaped as the runner expects (as @actions/core's issueCommand). */
function workflowCommand(a: Annotation): string {
  const prop = (s: string) => commandData(s).replace(/:/g, "%3A").replace(/,/g, "%2C");
  const props = [a.file ? `file=${prop(a.file)}` : null, `title=${prop(a.title)}`].filter(Boolean);
  return `::${a.level} ${props.join(",")}::${commandData(a.message)}`;
}
