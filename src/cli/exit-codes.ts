import { CommanderError } from "commander";
import { ExitCode, KcacheError } from "../errors.js";
import { noWorkflowCommands } from "../log.js";

/**
 * The CLI's one error boundary (main.ts): a known error becomes its documented exit code with a clean
 * message (docs/cli.md); anything else is a bug and prints its stack.
 */
export function exitCodeFor(e: unknown): number {
  if (e instanceof CommanderError) {
    // --help and --version end here too, with exit code 0.
    return e.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  }
  if (e instanceof KcacheError) {
    process.stderr.write(`kcache: error: ${noWorkflowCommands(e.message)}\n`);
    return e.exitCode;
  }
  if ((e as NodeJS.ErrnoException)?.syscall === "uv_cwd") {
    // The working folder was deleted (before kcache started, or by the job's own commands).
    process.stderr.write(
      `kcache: error: the working folder no longer exists (${(e as Error).message}); run kcache from a folder that does (the checkout)\n`,
    );
    return ExitCode.usage;
  }
  const code = (e as NodeJS.ErrnoException)?.code;
  if (code === "EMFILE" || code === "ENFILE") {
    // The limit on open files is too low for kcache to load its own code or open a store's files.
    process.stderr.write(
      `kcache: error: too many open files (${(e as Error).message}): ${code === "EMFILE" ? "this process's limit (ulimit -n)" : "the machine's limit (fs.file-max)"} is too low for kcache; raise it, e.g. \`ulimit -n 1024\` in the step before kcache\n`,
    );
    return ExitCode.usage;
  }
  process.stderr.write(`kcache: internal error (please report): ${(e as Error)?.stack ?? String(e)}\n`);
  return ExitCode.internal;
}
