import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { makeFolders } from "../make-folders.js";
import { watchGroup } from "./group-watchdog.js";
import { commandShell } from "./shell.js";

export interface CommandOutcome {
  exitCode: number;
  /** Signal that ended it, if one did. */
  signal: string | null;
  timedOut: boolean;
  seconds: number;
}

export interface CommandOptions {
  run: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  timeoutMs?: number;
  /** Where to echo output as it comes; null to only log it. */
  echo: NodeJS.WritableStream | null;
  /** Prefix for echoed lines when several commands run at once. */
  linePrefix?: string;
}

/** Exit code reported for a command stopped by its timeout, as coreutils' timeout does. */
export const TIMEOUT_EXIT = 124;

/**
 * Runs a shell command (bash -c, or sh -c where PATH has no bash) in its own process group, logging
 * stdout and stderr to a file and echoing them. A timeout sends SIGTERM to the whole group, then
 * SIGKILL after 10 s.
 */
export function runCommand(opts: CommandOptions): Promise<CommandOutcome> {
  makeFolders(path.dirname(opts.logFile));
  const log = fs.createWriteStream(opts.logFile);
  const t0 = performance.now();
  return new Promise((resolve) => {
    const shell = commandShell(opts.env) ?? "bash";
    const child = spawn(shell, ["-c", opts.run], {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const watchdog = watchGroup(child.pid, shell, opts.env); // ends it were kcache killed outright
    let timedOut = false;
    let killer: NodeJS.Timeout | undefined;
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            signalGroup(child.pid, "SIGTERM");
            killer = setTimeout(() => signalGroup(child.pid, "SIGKILL"), 10_000);
          }, opts.timeoutMs);
    const forward = (stream: NodeJS.ReadableStream) => {
      let partial = "";
      stream.on("data", (d: Buffer) => {
        log.write(d);
        if (!opts.echo) return;
        if (!opts.linePrefix) {
          opts.echo.write(d);
          return;
        }
        const lines = (partial + d.toString()).split("\n");
        partial = lines.pop() ?? "";
        for (const l of lines) opts.echo.write(`${opts.linePrefix}${l}\n`);
      });
      stream.on("end", () => {
        if (partial && opts.echo) opts.echo.write(`${opts.linePrefix ?? ""}${partial}\n`);
      });
    };
    forward(child.stdout);
    forward(child.stderr);
    // The command has a process group of its own (so a timeout ends all it started): a signal that
    // ends kcache (a cancelled job, `timeout`) would not reach it. It is passed on, SIGKILL follows
    // after 10 s, and once the command has ended kcache ends by the same signal, running nothing
    // more and saving nothing, as a shell does.
    let ended: NodeJS.Signals | null = null;
    const onSignal = (sig: NodeJS.Signals) => {
      ended ??= sig;
      signalGroup(child.pid, sig);
      killer ??= setTimeout(() => signalGroup(child.pid, "SIGKILL"), 10_000);
    };
    for (const s of PASSED_ON) process.on(s, onSignal);
    const done = (code: number | null, signal: NodeJS.Signals | null, error?: Error) => {
      watchdog.stop();
      for (const s of PASSED_ON) process.off(s, onSignal);
      if (timer) clearTimeout(timer);
      if (killer) clearTimeout(killer);
      if (error) {
        // Said where the job's log shows it too: the log file may be a temporary the runner deletes.
        const why = `kcache: could not start \`${opts.run}\`: ${startFailure(error, opts.cwd)}\n`;
        log.write(why);
        (opts.echo ?? process.stderr).write(why);
      }
      const outcome: CommandOutcome = {
        exitCode: timedOut ? TIMEOUT_EXIT : (code ?? (signal ? 128 + signalNumber(signal) : 1)),
        signal,
        timedOut,
        seconds: (performance.now() - t0) / 1000,
      };
      // The log is complete on disk before anyone is told the command ended.
      log.end(() => {
        if (ended !== null) endBySignal(ended);
        else resolve(outcome);
      });
    };
    child.on("error", (e) => done(127, null, e));
    child.on("close", (code, signal) => done(code, signal));
  });
}

/** Why a command could not start, with the fix: kcache runs every command with a shell, in `cwd`. */
function startFailure(error: NodeJS.ErrnoException, cwd: string): string {
  if (error.code !== "ENOENT") return error.message;
  if (!fs.existsSync(cwd)) return `its working directory ${cwd} does not exist`;
  return "neither bash nor sh was found on PATH (kcache runs each command with bash -c, or sh -c without bash); install bash or add it to PATH";
}

/** The signals a CI runner or `timeout` ends a job's processes with. */
const PASSED_ON: NodeJS.Signals[] = ["SIGTERM", "SIGINT", "SIGHUP"];

/** Ends kcache by `signal`, as if it had never caught it (every other command of it running gets it too). */
function endBySignal(signal: NodeJS.Signals): void {
  for (const s of PASSED_ON) process.removeAllListeners(s);
  process.kill(process.pid, signal);
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  const n = (
    {
      SIGHUP: 1,
      SIGINT: 2,
      SIGQUIT: 3,
      SIGABRT: 6,
      SIGKILL: 9,
      SIGSEGV: 11,
      SIGPIPE: 13,
      SIGTERM: 15,
    } as Record<string, number>
  )[signal];
  return n ?? 1;
}
