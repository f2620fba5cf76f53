import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without types
import { rehearsedCache, startupLoader } from "../../scripts/sea-rehearsal.mjs";
import { tempDir } from "../helpers/sandbox.js";

/**
 * The single executable's scripts compiled ahead from rehearsed commands (scripts/sea-rehearsal.mjs),
 * on scripts of the tests' own: the build (test/cli/single-executable.test.ts runs the real one)
 * fails where a rehearsal fails or V8 refuses its cache, instead of shipping an executable that
 * compiles every function again as it starts, or none of kcache's code.
 */

/** A start-up script as the build wraps it: a CommonJS module's function, `body` its text. */
function startupScript(dir: string, body: string): string {
  const file = path.join(dir, "startup.cjs");
  fs.writeFileSync(file, `(function (exports, require, module) {"use strict";${body}\n})`);
  return file;
}

/** rehearsedCache's arguments for `script` in `dir`, as the build gives them for the start-up part. */
function rehearsal(dir: string, script: string, more: Record<string, unknown> = {}) {
  return {
    node: process.execPath,
    script,
    assets: {},
    command: "key",
    mainFile: path.join(dir, "files", "cli", "main.js"),
    cache: path.join(dir, "startup.cache"),
    folder: dir,
    ...more,
  };
}

describe("the single executable's rehearsed code caches", () => {
  it("is made by running the script as `kcache key` in a made-up job, and the snapshot's main script loads the script from it", () => {
    const dir = tempDir("sea-startup");
    const asset = path.join(dir, "runtime-files.json");
    fs.writeFileSync(asset, '{"id":"x"}');
    // Says, in a file beside it, what each run saw: its command line, its asset, its environment.
    const said = path.join(dir, "said.jsonl");
    const script = startupScript(
      dir,
      `const rehearsing = process.env.KCACHE_STATE_DIR !== undefined;
       const asset = rehearsing ? Buffer.from(require("node:sea").getAsset("runtime-files.json")).toString() : null;
       const env = Object.keys(process.env).filter((k) => k !== "PATH").sort();
       require("node:fs").appendFileSync(${JSON.stringify(said)},
         JSON.stringify({ args: process.argv.slice(2), asset, env, cwd: process.cwd() }) + "\\n");`,
    );
    const cache = path.join(dir, "startup.cache");
    rehearsedCache(rehearsal(dir, script, { assets: { "runtime-files.json": asset } }));
    const rehearsals = fs
      .readFileSync(said, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    // Twice (the first keeps the answers the second reads), as `kcache key` with the executable's
    // asset, in a folder of its own removed after, seeing nothing of this machine's but PATH.
    expect(rehearsals).toHaveLength(2);
    for (const r of rehearsals) {
      expect(r.args).toEqual(["key"]);
      expect(r.asset).toBe('{"id":"x"}');
      expect(r.cwd).toBe(path.join(dir, "rehearsal"));
      expect(r.env).toEqual([
        "GITHUB_ACTIONS",
        "GITHUB_EVENT_NAME",
        "GITHUB_REF",
        "GITHUB_REPOSITORY",
        "GITHUB_SHA",
        "HOME",
        "KCACHE_CONFIG",
        "KCACHE_STATE_DIR",
      ]);
    }
    expect(fs.existsSync(path.join(dir, "rehearsal"))).toBe(false);
    expect(fs.statSync(cache).size).toBeGreaterThan(0);

    const loader = path.join(dir, "loader.cjs");
    fs.writeFileSync(loader, startupLoader(script, cache));
    const loaded = spawnSync(process.execPath, [loader, "key"], {
      cwd: dir,
      encoding: "utf8",
      env: { PATH: "" },
    });
    expect(loaded.stderr).toBe("");
    expect(loaded.status).toBe(0);
    expect(fs.readFileSync(said, "utf8").trim().split("\n")).toHaveLength(3);
  });

  it("fails the build, naming the cache, where V8 refuses it (another node's, other V8 flags, damaged)", () => {
    const dir = tempDir("sea-startup-refused");
    const script = startupScript(dir, "globalThis.loaded = 1;");
    const cache = path.join(dir, "startup.cache");
    fs.writeFileSync(cache, Buffer.alloc(4096, 7));
    const loader = path.join(dir, "loader.cjs");
    fs.writeFileSync(loader, startupLoader(script, cache));
    const r = spawnSync(process.execPath, [loader], { cwd: dir, encoding: "utf8" });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`${cache}: V8 refused the start-up part's code cache`);
  });

  it("fails the build with what the rehearsal said where `kcache key` fails in it", () => {
    const dir = tempDir("sea-startup-failed");
    const script = startupScript(dir, 'process.stderr.write("kcache: error: no stack\\n"); process.exit(4);');
    expect(() => rehearsedCache(rehearsal(dir, script))).toThrow(
      /startup\.cjs's rehearsal \(kcache key in .*\) failed \(4\):\nkcache: error: no stack/,
    );
    expect(fs.existsSync(path.join(dir, "startup.cache"))).toBe(false);
  });

  it("fails the build, never hangs it, where the rehearsal stalls", () => {
    const dir = tempDir("sea-startup-stalled");
    // Stalls for 20 s, then ends as a rehearsal that passed would: only the limit makes it a failure.
    const script = startupScript(dir, "setTimeout(() => {}, 20_000);");
    expect(() => rehearsedCache(rehearsal(dir, script, { timeoutMs: 1000 }))).toThrow(
      /rehearsal \(kcache key in .*\) failed \(stopped after 1 s\)/,
    );
  });

  it("runs the whole CLI's command through its runCli, with the placed files' main, and keeps its cache", () => {
    const dir = tempDir("sea-whole-cli");
    const said = path.join(dir, "said.jsonl");
    const script = startupScript(
      dir,
      `exports.runCli = (main) => require("node:fs").appendFileSync(${JSON.stringify(said)},
         JSON.stringify({ args: process.argv.slice(2), main }) + "\\n");`,
    );
    const cache = path.join(dir, "full-cli.cache");
    rehearsedCache(rehearsal(dir, script, { command: "restore", cache }));
    const runs = fs
      .readFileSync(said, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(runs).toEqual([
      { args: ["restore"], main: path.join(dir, "files", "cli", "main.js") },
      { args: ["restore"], main: path.join(dir, "files", "cli", "main.js") },
    ]);
    expect(fs.statSync(cache).size).toBeGreaterThan(0);
  });

  it("fails the build, naming the cache, where V8 refuses the cache a rehearsal left", () => {
    const dir = tempDir("sea-refused-after");
    const cache = path.join(dir, "full-cli.cache");
    // Damages its cache after the rehearsal wrote it, as the process ends.
    const script = startupScript(
      dir,
      `process.on("exit", () => { const fs = require("node:fs"); const c = ${JSON.stringify(cache)};
         if (fs.existsSync(c)) fs.writeFileSync(c, Buffer.alloc(4096, 7)); });`,
    );
    expect(() => rehearsedCache(rehearsal(dir, script, { command: "restore", cache }))).toThrow(
      `${cache}: V8 refused the code cache of startup.cjs's rehearsal (kcache restore in`,
    );
  });
});
