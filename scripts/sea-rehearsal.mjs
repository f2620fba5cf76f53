// V8 code caches of the single executable's two scripts, made by rehearsing a command
// (scripts/build-sea.mjs). V8 compiles a function at its first call unless a code cache (or a
// start-up snapshot) holds it compiled, and a cache made before anything ran holds little but the
// scripts' top level: each run compiled every function its command calls. The build runs a command
// of each script in a throwaway process, in a made-up job in a folder of its own, and keeps V8's
// code cache of the script with what that compiled:
// - the start-up part (`key`, `stack`, `--version`, `--help`): `kcache key`, ~240 functions, ~4 ms
//   of its start measured here. The snapshot's main script (startupLoader) compiles the start-up part
//   from that cache as the snapshot is made, so the snapshot keeps them compiled;
// - the whole CLI (every other command): `kcache restore` missing, the configuration, stack, scope
//   and store code every command shares, ~11 ms of a restore's start measured here. The executable
//   compiles the whole CLI from that cache as such a command starts (script-assets.ts).
// Only code crosses over: what a rehearsal read, probed or kept ends with its process and folder.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * Runs the script at argv[1] (a CommonJS module's function) as the executable runs the command
 * argv[3], its assets the files that the JSON at argv[2] names, its placed files' cli/main.js at
 * argv[4] (the whole CLI's runCli; the start-up part finds its own as it loads), and, where argv[5]
 * is given, writes V8's code cache of the script to it as the process exits. Node's SEA asset reader
 * is the files'; kcache's V8 flag (young-generation.ts) is not set: a cache made under other flags
 * is one V8 refuses.
 */
const REHEARSAL = `
const fs = require("node:fs"), vm = require("node:vm"), v8 = require("node:v8");
const [file, assetsFile, command, mainFile, out] = process.argv.slice(1);
const assets = JSON.parse(fs.readFileSync(assetsFile, "utf8"));
const getAsset = (name) => {
  const b = fs.readFileSync(assets[name]);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
};
const builtins = { "node:sea": { ...require("node:sea"), getAsset }, "node:v8": { ...v8, setFlagsFromString() {} } };
const script = new vm.Script(fs.readFileSync(file, "utf8"), { filename: file });
if (out) process.on("exit", () => fs.writeFileSync(out, script.createCachedData()));
process.argv = [process.execPath, "kcache", command];
const m = { exports: {} };
script.runInThisContext()(m.exports, (id) => builtins[id] ?? require(id), m);
if (typeof m.exports.runCli === "function") m.exports.runCli(mainFile);
`;

/** Compiles the script at argv[1] with the code cache at argv[2]; exits 3 where V8 refuses the cache. */
const ACCEPTED = `
const fs = require("node:fs"), vm = require("node:vm");
const [file, cache] = process.argv.slice(1);
const script = new vm.Script(fs.readFileSync(file, "utf8"), { filename: file, cachedData: fs.readFileSync(cache) });
process.exitCode = script.cachedDataRejected ? 3 : 0;
`;

/** The made-up job the rehearsal runs in: a GitHub Actions push to main, with a kcache.yml of one Triton cache. */
const KCACHE_YML = `caches:
  - name: triton
    kind: triton
    path: ./triton-cache
store:
  path: ./store
key:
  prefix: rehearsal
`;

/**
 * Writes to `cache` V8's code cache of the executable's script `script` (made by `node`, the
 * executable's own) after it ran `kcache <command>` in a made-up job under `folder`; `assets` maps
 * the executable's asset names to their files, `mainFile` is its placed files' cli/main.js. Two
 * runs: the first keeps the answers a job's first command keeps (the Python probe's, kcache.yml's
 * validation), the second reads them as every later command does, and its code is the one kept. A
 * rehearsal that fails or runs past `timeoutMs`, or a cache V8 refuses, fails the build.
 */
export function rehearsedCache({
  node,
  script,
  assets,
  command,
  mainFile,
  cache,
  folder,
  timeoutMs = 60_000,
}) {
  const home = path.join(folder, "rehearsal");
  fs.rmSync(home, { recursive: true, force: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(home, "kcache.yml"), KCACHE_YML);
  const assetsFile = path.join(folder, "rehearsal-assets.json");
  fs.writeFileSync(assetsFile, JSON.stringify(assets));
  // Only PATH from the build's environment (the Python it probes): nothing of the build machine's
  // state folder, CI or NODE_OPTIONS.
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: home,
    KCACHE_STATE_DIR: path.join(home, "state"),
    KCACHE_CONFIG: path.join(home, "kcache.yml"),
    GITHUB_ACTIONS: "true",
    GITHUB_EVENT_NAME: "push",
    GITHUB_REF: "refs/heads/main",
    GITHUB_REPOSITORY: "kcache/rehearsal",
    GITHUB_SHA: "f".repeat(40),
  };
  const said = `${path.basename(script)}'s rehearsal (kcache ${command} in ${home})`;
  for (const out of [null, cache]) {
    const r = spawnSync(
      node,
      ["-e", REHEARSAL, script, assetsFile, command, mainFile, ...(out ? [out] : [])],
      {
        cwd: home,
        env,
        encoding: "utf8",
        // Twice the Python probe's own limit (30 s): a rehearsal that stalls fails the build, never hangs it.
        timeout: timeoutMs,
        killSignal: "SIGKILL",
      },
    );
    if (r.status !== 0)
      throw new Error(
        `${said} failed (${r.error?.code === "ETIMEDOUT" ? `stopped after ${timeoutMs / 1000} s` : (r.status ?? r.signal)}):\n${r.stderr}`,
      );
  }
  fs.rmSync(home, { recursive: true, force: true });
  const taken = spawnSync(node, ["-e", ACCEPTED, script, cache], {
    encoding: "utf8",
    env: { PATH: env.PATH },
  });
  if (taken.status !== 0)
    throw new Error(
      `${cache}: V8 refused the code cache of ${said} (${taken.status ?? taken.signal})\n${taken.stderr}`,
    );
}

/**
 * The executable's main script where it carries a start-up snapshot: run only as the snapshot is
 * made, it compiles the start-up script `script` from its rehearsed code cache `cache` (the
 * snapshot then keeps what the cache compiled) and loads it. The build fails where V8 refuses the
 * cache.
 */
export function startupLoader(script, cache) {
  const refused = `${cache}: V8 refused the start-up part's code cache (made by another node, or under other V8 flags)`;
  return `"use strict";
const fs = require("node:fs"), vm = require("node:vm");
const script = new vm.Script(fs.readFileSync(${JSON.stringify(script)}, "utf8"), {
  filename: ${JSON.stringify(script)},
  cachedData: fs.readFileSync(${JSON.stringify(cache)}),
});
if (script.cachedDataRejected) throw new Error(${JSON.stringify(refused)});
const loaded = { exports: {} };
script.runInThisContext()(loaded.exports, require, loaded);
`;
}
