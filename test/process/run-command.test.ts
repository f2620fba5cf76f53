import fs from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCommand } from "../../src/process/run-command.js";
import { tempDir } from "../helpers/sandbox.js";

/** Runs `run` as a stage command does, with its echo collected. */
async function run(run: string, env: NodeJS.ProcessEnv, cwd: string) {
  const dir = tempDir("run-command");
  const echo = new PassThrough();
  let said = "";
  echo.on("data", (d: Buffer) => {
    said += d.toString();
  });
  const logFile = path.join(dir, "logs", "stage.log");
  const outcome = await runCommand({ run, env, cwd, logFile, echo });
  return { outcome, said, log: fs.readFileSync(logFile, "utf8") };
}

describe("a stage command that cannot start", () => {
  it("says why where the job's log shows it, not only in its log file: no shell on PATH", async () => {
    const r = await run("echo hi", { PATH: tempDir("no-shell-here") }, tempDir("cwd"));
    expect(r.outcome.exitCode).toBe(127);
    expect(r.said).toMatch(
      /could not start `echo hi`: neither bash nor sh was found on PATH \(kcache runs each command with bash -c, or sh -c without bash\)/,
    );
    expect(r.log).toBe(r.said);
  });

  it("runs with sh where PATH has sh and no bash (a slim container)", async () => {
    const bin = tempDir("only-sh");
    fs.symlinkSync(fs.realpathSync("/bin/sh"), path.join(bin, "sh"));
    const r = await run('echo "$0 says hi"', { PATH: bin }, tempDir("cwd"));
    expect(r.outcome.exitCode).toBe(0);
    expect(r.said).toBe("sh says hi\n");
  });

  it("names a working directory that does not exist", async () => {
    const cwd = path.join(tempDir("gone"), "missing");
    const r = await run("echo hi", { PATH: process.env.PATH }, cwd);
    expect(r.outcome.exitCode).toBe(127);
    expect(r.said).toContain(`its working directory ${cwd} does not exist`);
  });

  it("runs as before where bash is there", async () => {
    const r = await run("echo hi", { PATH: process.env.PATH }, tempDir("cwd"));
    expect(r.outcome.exitCode).toBe(0);
    expect(r.said).toBe("hi\n");
  });
});
