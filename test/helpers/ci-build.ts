import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ENVIRONMENT_VARIABLES } from "../../src/environment.js";
import { installedStack } from "../fixtures/installed-stack.js";
import { childOutput } from "./child-output.js";
import { BIN, runCli } from "./cli.js";
import { SIM } from "./python-sim.js";
import { S3RVER_CREDENTIALS, type S3Server } from "./s3rver.js";
import { tempDir } from "./sandbox.js";

/*
 * Another CI's build, run here: a checkout detached at a commit (as GitLab, Buildkite and Jenkins
 * check out), a fresh runner folder, that system's variables, and a pipeline's shell text run by
 * sh or bash. kcache is the built bin/kcache.js behind a wrapper that logs how it was called; the
 * pipelines' install lines put it on PATH through KCACHE_INSTALL, or a fake curl "downloads" it.
 */

export const PROFILE = "bench";
/** What the checks read and the artifacts keep: the workload's results. */
export const RESULTS = "bench.json";
/** kcache has read-only mode (another change): a build without the write key then saves nothing. */
export const READ_ONLY_KNOWN = "KCACHE_READ_ONLY" in ENVIRONMENT_VARIABLES;

export type StoreKind = { local: string } | { s3: S3Server };

export interface CiCheckout {
  root: string;
  dir: string;
  store: StoreKind;
  /** main's first and second commits, and a merge request's head on the first. */
  main1: string;
  main2: string;
  change: string;
  /** The kcache wrapper's folder, and the file it logs each call to (KCACHE_READ_ONLY, arguments). */
  wrapper: string;
  calls: string;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd })
    .toString()
    .trim();
}

/**
 * The kcache.yml of the checkout: the simulated Triton workload, its results checked, a prewarm.
 * Each checkout its own prefix in a shared bucket: another test's pr/3 is not this one's.
 */
export function ciKcacheYml(store: StoreKind, prefix: string, github: string[] = []): string {
  const storeLine =
    "local" in store
      ? `store: { type: local, path: "${store.local}" }`
      : `store: { type: s3, bucket: ${store.s3.bucket}, prefix: ${prefix}/, path-style: true }`;
  return [
    "caches:",
    '  - { name: triton, kind: triton, path: "${TRITON_CACHE_DIR}" }',
    storeLine,
    "key: { prefix: sim-bench }",
    "profiles:",
    `  ${PROFILE}:`,
    `    env: { PYTHONPATH: "${SIM}:${installedStack()}", TRITON_SIM_COMPILE_MS: "1" }`,
    "    commands:",
    `      - { name: workload, run: python3 ${SIM}/workload.py 3 1 --json ${RESULTS} }`,
    "    checks:",
    `      - { type: finite-positive, file: ${RESULTS}, fields: [median_ms] }`,
    "    github:",
    "      setup: [echo set up > setup.txt]",
    '      prewarm: { cron: "0 0 * * 1,3,5", timezone: Asia/Shanghai, paths: ["src/**"] }',
    ...github.map((l) => `      ${l}`),
    "",
  ].join("\n");
}

/**
 * A repository with kcache.yml, two commits on main and a change on the first, and the kcache wrapper.
 * `github` adds lines to the profile's github: block.
 */
export function ciCheckout(store: StoreKind, github: string[] = []): CiCheckout {
  const root = tempDir("ci-build");
  const dir = path.join(root, "checkout");
  fs.mkdirSync(dir);
  git(dir, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(dir, "kcache.yml"), ciKcacheYml(store, path.basename(root), github));
  fs.writeFileSync(path.join(dir, ".gitignore"), ".kcache/\n.kcache-bin/\nsetup.txt\nbench.json\n");
  git(dir, "add", ".");
  git(dir, "commit", "-qm", "one");
  const main1 = git(dir, "rev-parse", "HEAD");
  git(dir, "commit", "-q", "--allow-empty", "-m", "two");
  const main2 = git(dir, "rev-parse", "HEAD");
  git(dir, "checkout", "-qb", "feature", main1);
  git(dir, "commit", "-q", "--allow-empty", "-m", "a change");
  const change = git(dir, "rev-parse", "HEAD");
  const wrapper = path.join(root, "wrapper");
  fs.mkdirSync(wrapper);
  const calls = path.join(root, "calls.log");
  fs.writeFileSync(
    path.join(wrapper, "kcache"),
    `#!/bin/sh\necho "KCACHE_READ_ONLY=\${KCACHE_READ_ONLY:-} $*" >> "${calls}"\nexec "${process.execPath}" "${BIN}" "$@"\n`,
    { mode: 0o755 },
  );
  return { root, dir, store, main1, main2, change, wrapper, calls };
}

/** A fake curl: "downloads" the kcache wrapper to -o's file and logs the URL asked for. */
export function fakeCurl(c: CiCheckout): { dir: string; urls: string } {
  const dir = path.join(c.root, "fake-curl");
  const urls = path.join(c.root, "curl.log");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, "curl"),
    `#!/bin/sh\nout=; url=\nwhile [ $# -gt 0 ]; do case $1 in -o) out=$2; shift 2 ;; -*) shift ;; *) url=$1; shift ;; esac; done\necho "$url" >> "${urls}"\ncp "${path.join(c.wrapper, "kcache")}" "$out"\n`,
    { mode: 0o755 },
  );
  return { dir, urls };
}

let builds = 0;

/**
 * A runner's environment for one build: its own folder (home, Triton cache, state), the checkout
 * detached at `sha` and cleaned of the last build's files, the store's endpoint, the system's
 * variables and whatever credentials the system gave this build.
 */
export function runnerEnv(c: CiCheckout, sha: string, vars: Record<string, string>): NodeJS.ProcessEnv {
  git(c.dir, "checkout", "-q", "--detach", sha);
  git(c.dir, "clean", "-qfdx");
  const runner = path.join(c.root, `runner-${++builds}`);
  return {
    PATH: process.env.PATH,
    HOME: runner,
    TRITON_CACHE_DIR: path.join(runner, "triton"),
    KCACHE_STATE_DIR: path.join(runner, "state"),
    AWS_EC2_METADATA_DISABLED: "true",
    ...("s3" in c.store ? { KCACHE_S3_ENDPOINT: c.store.s3.endpoint } : {}),
    ...vars,
  };
}

/** The installs the tests use: the wrapper put on PATH through KCACHE_INSTALL. */
export function installVariable(c: CiCheckout): Record<string, string> {
  return { KCACHE_INSTALL: `export PATH="${c.wrapper}:$PATH"` };
}

/** The store's write key (what a protected variable, a credential binding or an agent hook gives). */
export const WRITE_KEY = S3RVER_CREDENTIALS;
/** A key that may only read, under the names a build without the write key reads with. */
export const READER_KEY = {
  KCACHE_READER_ACCESS_KEY_ID: S3RVER_CREDENTIALS.AWS_ACCESS_KEY_ID,
  KCACHE_READER_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
};

export interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a pipeline's shell text in the checkout, as the system's shell runs it. */
export function runShell(
  shell: "sh" | "bash",
  text: string,
  opts: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<ShellResult> {
  const file = path.join(path.dirname(opts.cwd), `script-${++builds}.sh`);
  fs.writeFileSync(file, text);
  const args = shell === "bash" ? ["-eo", "pipefail", file] : ["-e", file];
  const child = spawn(shell, args, { env: opts.env, cwd: opts.cwd });
  const out = childOutput(child);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: out.stdout, stderr: out.stderr }));
  });
}

/** kcache's calls since the last look: the KCACHE_READ_ONLY each saw, and its arguments. */
export function takeCalls(c: CiCheckout): { readOnly: string; args: string }[] {
  if (!fs.existsSync(c.calls)) return [];
  const lines = fs.readFileSync(c.calls, "utf8").trim().split("\n").filter(Boolean);
  fs.rmSync(c.calls);
  return lines.map((l) => {
    const m = /^KCACHE_READ_ONLY=(\S*) (.*)$/.exec(l);
    return { readOnly: m?.[1] ?? "", args: m?.[2] ?? l };
  });
}

/** The run report a build left where its artifact paths say, read as an artifact would be. */
export function runReport(
  c: CiCheckout,
  folder: string,
): {
  scope: string;
  passed: boolean;
  restore: { matchedScope: string | null } | null;
  save: { outcome: string } | null;
} {
  return JSON.parse(fs.readFileSync(path.join(c.dir, folder, "kcache-report.json"), "utf8"));
}

/** Every key in the store, with its scope (`kcache ls`). */
export async function storeKeys(c: CiCheckout): Promise<{ key: string; scope: string }[]> {
  const env = {
    PATH: process.env.PATH,
    HOME: c.root,
    TRITON_CACHE_DIR: path.join(c.root, "ls-cache"),
    ...("s3" in c.store ? { KCACHE_S3_ENDPOINT: c.store.s3.endpoint, ...WRITE_KEY } : {}),
  };
  const r = await runCli(["ls", "--json"], { env, cwd: c.dir });
  if (r.code !== 0) throw new Error(`kcache ls: ${r.stderr}`);
  return (JSON.parse(r.stdout).keys as { key: string; scope: string }[]).map((k) => ({
    key: k.key,
    scope: k.scope,
  }));
}

/** Writes the pipeline files of `kcache workflow --ci <system>` into the checkout and returns their text. */
export async function writePipeline(c: CiCheckout, ci: string, file: string): Promise<string> {
  const r = await runCli(["workflow", "--ci", ci, "--profile", PROFILE], {
    env: { PATH: process.env.PATH, HOME: c.root },
    cwd: c.dir,
  });
  if (r.code !== 0) throw new Error(`kcache workflow --ci ${ci}: ${r.stderr}`);
  return fs.readFileSync(path.join(c.dir, file), "utf8");
}
