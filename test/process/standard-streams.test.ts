import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BIN } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * GitLab's shell executor (and any runner that pipes the job's script into `bash -s`) runs kcache
 * with the shell's own script pipe as its standard input. A kcache killed with -9 (a cancelled or
 * timed-out job) must leave that pipe as it found it: the shell reads its next line from it. Found
 * by the simulation (seed 49): a drop-in job's shell died with "error reading input file: Resource
 * temporarily unavailable" after its restore was killed, and its save never ran.
 */
function project(store: "local" | "s3"): { dir: string; config: string } {
  const dir = tempDir("stdin");
  const config = path.join(dir, "kcache.yml");
  fs.writeFileSync(
    config,
    [
      "caches:",
      `  - { name: triton, kind: triton, path: "${path.join(dir, "triton")}" }`,
      store === "local"
        ? `store: { type: local, path: "${path.join(dir, "store")}" }`
        : // Nothing listens there: the job goes on without its cache, but the SDK is loaded.
          "store: { type: s3, bucket: kernels, endpoint: 'http://127.0.0.1:9', region: us-east-1, path-style: true }",
      "key: { prefix: stdin }",
      "profiles:",
      "  job:",
      "    commands:",
      // The job's command ends kcache itself with kill -9 while kcache waits for it: every module
      // kcache loads is loaded by then.
      '      - { name: cancelled, run: "kill -9 $PPID" }',
      "",
    ].join("\n"),
  );
  return { dir, config };
}

/** A job shell reading its script from a pipe, line by line as the script arrives; its exit, stdout and stderr. */
async function jobShell(
  dir: string,
  lines: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const shell = spawn("bash", ["-s"], { cwd: dir, env, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  shell.stdout.on("data", (d: Buffer) => (stdout += d));
  shell.stderr.on("data", (d: Buffer) => (stderr += d));
  const closed = new Promise<number | null>((resolve) => shell.on("close", resolve));
  for (const line of lines) {
    // Each line once the last has run (its marker printed), so the shell waits on an empty pipe.
    const marker = `line-${lines.indexOf(line)}-ran`;
    shell.stdin.write(`${line}; echo ${marker}\n`);
    const deadline = Date.now() + 60_000;
    while (!stdout.includes(marker) && shell.exitCode === null && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    // The shell, now idle, reads on: it must still be waiting for the next line a moment later.
    await new Promise((r) => setTimeout(r, 200));
  }
  shell.stdin.end();
  return { code: await closed, stdout, stderr };
}

describe("kcache killed -9 leaves the job shell's standard input as it found it", () => {
  const gitlab = { GITLAB_CI: "true", CI_COMMIT_SHA: "a".repeat(40), CI_COMMIT_REF_NAME: "main" };
  it.each([
    ["GitLab's shell executor, an S3 store", gitlab, "s3"],
    ["an unknown CI, a local store", { BUILD_NUMBER: "7" }, "local"],
  ] as const)("under %s, the job's next lines still run", async (_ci, vars, store) => {
    const { dir, config } = project(store);
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      CI: "true",
      AWS_ACCESS_KEY_ID: "k",
      AWS_SECRET_ACCESS_KEY: "s",
      ...vars,
    };
    const r = await jobShell(
      dir,
      [`${process.execPath} ${BIN} run -c ${config} -p job`, "echo the job goes on"],
      env,
    );
    expect(r.stderr).toContain("Killed"); // kcache itself was killed
    expect(r.stderr).not.toContain("error reading input");
    expect(r.stdout).toContain("the job goes on");
    expect(r.code).toBe(0);
  });
});
