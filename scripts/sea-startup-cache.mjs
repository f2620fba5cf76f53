// The single executable's start-up part compiled ahead (scripts/build-sea.mjs). A start-up snapshot
// keeps the bytecode of the functions compiled when it was made, but the snapshot's modules only
// declare most of the functions a command calls: each run compiled every one `kcache key` calls at
// its first call (~240 functions, ~50 KB of source, ~4 ms of its start measured here). The build
// rehearses `kcache key` in a throwaway process, on a made-up job in a folder of its own, and keeps
// V8's code cache of the start-up script with what that compiled; the snapshot's main script
// (startupLoader) compiles the start-up script from that cache, so the snapshot holds those
// functions compiled. Only code crosses over: what the rehearsal read, probed or kept ends with its
// process and folder.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * Runs the start-up script at argv[1] (a CommonJS module's function) as the executable runs
 * `kcache key`, its assets the files that the JSON at argv[2] names, and, where argv[3] is given,
 * writes V8's code cache of the script to it as the process exits. Node's SEA asset reader is the
 * files'; kcache's V8 flag (young-generation.ts) is not set: a cache made under other flags is one
 * the snapshot's compile refuses.
 */
const REHEARSAL = `
const fs = require("node:fs"), vm = require("node:vm"), v8 = require("node:v8");
const [file, assetsFile, out] = process.argv.slice(1);
const assets = JSON.parse(fs.readFileSync(assetsFile, "utf8"));
const getAsset = (name) => {
  const b = fs.readFileSync(assets[name]);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
};
const builtins = { "node:sea": { ...require("node:sea"), getAsset }, "node:v8": { ...v8, setFlagsFromString() {} } };
const script = new vm.Script(fs.readFileSync(file, "utf8"), { filename: file });
if (out) process.on("exit", () => fs.writeFileSync(out, script.createCachedData()));
process.argv = [process.execPath, "kcache", "key"];
const m = { exports: {} };
script.runInThisContext()(m.exports, (id) => builtins[id] ?? require(id), m);
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
 * Writes to `cache` V8's code cache of the start-up script `script` (made by `node`, the
 * executable's own) after it ran `kcache key` in a made-up job under `folder`; `assets` maps the
 * executable's asset names to their files. Two runs: the first keeps the answers a job's first
 * command keeps (the Python probe's, kcache.yml's validation), the second reads them as every later
 * command does, and its code is the one kept. A rehearsal that fails, or runs past `timeoutMs`,
 * fails the build.
 */
export function rehearsedCache({ node, script, assets, cache, folder, timeoutMs = 60_000 }) {
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
  for (const out of [null, cache]) {
    const r = spawnSync(node, ["-e", REHEARSAL, script, assetsFile, ...(out ? [out] : [])], {
      cwd: home,
      env,
      encoding: "utf8",
      // Twice the Python probe's own limit (30 s): a rehearsal that stalls fails the build, never hangs it.
      timeout: timeoutMs,
      killSignal: "SIGKILL",
    });
    if (r.status !== 0)
      throw new Error(
        `the start-up part's rehearsal (kcache key in ${home}) failed (${r.error?.code === "ETIMEDOUT" ? `stopped after ${timeoutMs / 1000} s` : (r.status ?? r.signal)}):\n${r.stderr}`,
      );
  }
  fs.rmSync(home, { recursive: true, force: true });
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
