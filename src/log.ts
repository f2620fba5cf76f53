/**
 * Messages for people: plain lines on stderr, and under GitHub Actions warnings also become
 * `::warning::` annotations. Results meant for programs go to stdout (--json), never here.
 */
import { hostEnvironment } from "./environment.js";

export interface Log {
  info(msg: string): void;
  warn(msg: string): void;
  /** Detail shown with --verbose. */
  debug(msg: string): void;
  warnings: string[];
}

export function createLog(opts: { verbose?: boolean; quiet?: boolean; env?: NodeJS.ProcessEnv } = {}): Log {
  const env = opts.env ?? hostEnvironment();
  const gha = env.GITHUB_ACTIONS === "true";
  const warnings: string[] = [];
  return {
    warnings,
    info(msg) {
      if (!opts.quiet) process.stderr.write(`kcache: ${noWorkflowCommands(msg)}\n`);
    },
    warn(msg) {
      warnings.push(msg);
      process.stderr.write(
        gha
          ? `::warning title=kcache::${commandData(msg)}\n`
          : `kcache: warning: ${noWorkflowCommands(msg)}\n`,
      );
    },
    debug(msg) {
      if (opts.verbose) process.stderr.write(`kcache: ${noWorkflowCommands(msg)}\n`);
    },
  };
}

/** A log that records and prints nothing: for library callers and tests. */
export function silentLog(): Log {
  const warnings: string[] = [];
  return { warnings, info() {}, warn: (m) => void warnings.push(m), debug() {} };
}

/**
 * A message with no line a CI runner would take for a command of its own, as messages quote what
 * stores and jobs wrote (a plan's keys, an object's name). GitHub's runner takes a line for a workflow
 * command when it starts `::` after any whitespace it trims (tabs, vertical tabs, no-break spaces:
 * .NET's TrimStart), and, in its older form, when `##[` appears anywhere in it. A line break before
 * such a line is written as `\n` (the text stays on kcache's own line), and `##[` as `##\[`.
 */
export function noWorkflowCommands(s: string): string {
  return s
    .replace(/(?:\r\n|\r|\n)(?=\s*::)/g, (m) => JSON.stringify(m).slice(1, -1))
    .replaceAll("##[", "##\\[");
}

/**
 * Text as the data of a workflow command (`::warning ...::<data>`), escaped as the runner reads it
 * (@actions/core's escapeData), and `##[` too: the runner's older command form.
 */
export function commandData(s: string): string {
  return s.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A").replaceAll("##[", "##\\[");
}
