import fs from "node:fs";
import path from "node:path";
import { hostEnvironment } from "../../environment.js";
import { UsageError } from "../../errors.js";
import { githubCommandLog } from "../../github/command-groups.js";
import { writeStepSummary } from "../../github/outputs.js";
import { compare } from "../../pipeline/compare.js";
import { inOutFolder } from "../../pipeline/out-folder.js";
import { compareHtml } from "../../report/compare-html.js";
import { compareMarkdown } from "../../report/compare-markdown.js";
import type { GlobalOptions } from "../options.js";
import { commandJob, printJson } from "../setup.js";

export async function compareCommand(
  o: GlobalOptions & {
    profile: string;
    rounds: string;
    out?: string;
    file?: string;
    /** compare's --key names the fields of a record, not a cache key. */
    key?: string;
    metric?: string[];
    threshold?: string;
    records?: string;
    readOnly?: boolean;
  },
) {
  const rounds = Number(o.rounds);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new UsageError(`--rounds ${o.rounds}: give a whole number of at least 1`);
  if (o.file && !o.key) throw new UsageError("--file needs --key (the fields that identify a record)");
  const threshold = o.threshold === undefined ? 0.05 : Number(o.threshold);
  if (!(threshold > 0)) throw new UsageError(`--threshold ${o.threshold}: give a share such as 0.05 for 5%`);
  const job = await commandJob({ ...o, key: undefined }, o.profile, true);
  const { log } = job.ctx;
  // Read-only: no run seeds the store; each run's save stage says so in one line.
  if (o.readOnly) job.ctx.readOnly.enter("--read-only");
  const held = { given: o.out !== undefined, cwd: job.cwd, log };
  const requested = o.out ?? path.join(".kcache", `compare-${o.profile}`);
  await inOutFolder(requested, held, async (out) => {
    const report = await compare({
      job,
      outDir: out,
      rounds,
      echo: process.stderr,
      commandLog: githubCommandLog(job.env, process.stderr, log),
      records: o.file
        ? {
            file: o.file,
            records: o.records,
            key: (o.key as string).split(","),
            metrics: o.metric ?? ["median_ms"],
            threshold,
          }
        : undefined,
    });
    const markdown = compareMarkdown(report);
    fs.writeFileSync(path.join(out, "compare.json"), `${JSON.stringify(report, null, 2)}\n`);
    fs.writeFileSync(path.join(out, "compare.md"), markdown);
    fs.writeFileSync(path.join(out, "compare.html"), compareHtml(report));
    writeStepSummary(hostEnvironment(), markdown);
    if (o.json) printJson(report);
    else process.stdout.write(markdown);
    log.info(`wrote ${path.join(out, "compare.json")}, compare.md and compare.html`);
    if (!report.passed) {
      log.warn("some runs failed their commands or checks; their timings are in the report");
      process.exitCode = 6;
    }
  });
}
