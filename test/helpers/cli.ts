import { spawn } from "node:child_process";
import path from "node:path";
import { childOutput } from "./child-output.js";

export const BIN = path.resolve(import.meta.dirname, "../../bin/kcache.js");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `kcache` as a user would, with exactly the environment given. */
export function runCli(args: string[], opts: { env: NodeJS.ProcessEnv; cwd: string }): Promise<CliResult> {
  return startCli(args, opts).promise;
}

/**
 * Starts the built `kcache` and returns at once: the test can kill it (-9) at the moment it chooses.
 * `wrapper` runs it under another command (`unshare --pid --fork`: PID 1 of a namespace of its own).
 */
export function startCli(
  args: string[],
  opts: { env: NodeJS.ProcessEnv; cwd: string; wrapper?: string[] },
): { pid: number; kill(): void; promise: Promise<CliResult> } {
  const [cmd, ...argv] = [...(opts.wrapper ?? []), process.execPath, BIN, ...args] as [string, ...string[]];
  const child = spawn(cmd, argv, { env: opts.env, cwd: opts.cwd });
  const out = childOutput(child);
  const promise = new Promise<CliResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: out.stdout, stderr: out.stderr }));
  });
  return { pid: child.pid as number, kill: () => child.kill("SIGKILL"), promise };
}
