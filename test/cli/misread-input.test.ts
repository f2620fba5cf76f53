import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { BIN, runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * Input kcache cannot use, as a user gets it wrong: each says what is wrong and the fix, and never
 * passes for something else (a default taken silently, a FIFO called a folder, an exit with no JSON).
 */
describe("what kcache says of input it cannot use", () => {
  it("a variable of kcache's with a value it does not understand: one warning naming it and the fix, and the command goes on", async () => {
    const p = project();
    const r = await runCli(["key"], {
      env: { ...p.env, KCACHE_THREADS: "abc", KCACHE_S3_PATH_STYLE: "yes", KCACHE_S3_CHECKSUMS: "off" },
      cwd: p.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^trust-/);
    expect(r.stderr).toMatch(
      /warning: KCACHE_THREADS="abc" is not a whole number above 0: kcache uses one thread per core \(capped\); set it to a number such as 4, or unset it/,
    );
    expect(r.stderr).toMatch(/warning: KCACHE_S3_PATH_STYLE="yes" is not 1, true, 0 or false/);
    expect(r.stderr).toMatch(/warning: KCACHE_S3_CHECKSUMS="off" is not when-required/);
    const good = await runCli(["key"], { env: { ...p.env, KCACHE_THREADS: "4" }, cwd: p.dir });
    expect(good.stderr).not.toMatch(/KCACHE_THREADS/);
    // A value S3's settings do not honour as given (" 1" is not "1") is said too: one parse serves both.
    const spaced = await runCli(["key"], { env: { ...p.env, KCACHE_S3_PATH_STYLE: " 1" }, cwd: p.dir });
    expect(spaced.stderr).toMatch(/warning: KCACHE_S3_PATH_STYLE=" 1" is not 1, true, 0 or false/);
  });

  it("a --config that is a FIFO, a loop of links or a link to nothing: named as what it is, at once (exit 2)", async () => {
    const p = project();
    execFileSync("mkfifo", [path.join(p.dir, "fifo.yml")]);
    fs.symlinkSync("loop.yml", path.join(p.dir, "loop.yml"));
    fs.symlinkSync("nowhere.yml", path.join(p.dir, "dangling.yml"));
    const said = async (file: string) => {
      const r = await runCli(["key", "-c", file], { env: p.env, cwd: p.dir });
      expect(r.code).toBe(2);
      return r.stderr;
    };
    expect(await said("fifo.yml")).toMatch(
      /fifo\.yml: is a FIFO \(a named pipe\), not a config file; pass --config/,
    );
    expect(await said("loop.yml")).toMatch(
      /loop\.yml: is a link that leads back to itself \(a loop of links\)/,
    );
    expect(await said("dangling.yml")).toMatch(
      /dangling\.yml: is a link to nowhere\.yml, which does not exist/,
    );
    expect(await said(".")).toMatch(/: is a folder, not a config file/);
    fs.symlinkSync("kcache.yml", path.join(p.dir, "linked.yml"));
    expect((await runCli(["key", "-c", "linked.yml"], { env: p.env, cwd: p.dir })).code).toBe(0);
  });

  it("restore and save that --strict fails still print their JSON, with the fault and the error (exit 3)", async () => {
    const p = project();
    generateTritonCache(p.cache, { entries: 3, totalBytes: 30_000 });
    // The store's folder is a file: every read of it fails on this machine's filesystem.
    fs.writeFileSync(p.store, "not a folder");
    for (const command of ["restore", "save"]) {
      const r = await runCli([command, "--json", "--strict"], { env: p.env, cwd: p.dir });
      expect(r.code, r.stderr).toBe(3);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({
        primaryKey: expect.stringMatching(/^trust-/),
        faults: [{ code: "disk-failed", message: expect.stringMatching(/ENOTDIR/) }],
        error: expect.stringMatching(/ENOTDIR/),
      });
      if (command === "save") expect(out.outcome).toBe("failed");
      else expect(out.matchedKey).toBeNull();
    }
    // Without --strict the same fault warns, and the JSON says so as ever (exit 0).
    const lenient = await runCli(["restore", "--json"], { env: p.env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(JSON.parse(lenient.stdout).faults).toEqual([
      { code: "disk-failed", message: expect.stringMatching(/ENOTDIR/) },
    ]);
  });

  it("a filesystem error of this machine is named as one, with what to look at, not as an unexpected error", async () => {
    const p = project();
    fs.writeFileSync(path.join(p.dir, "a-file"), "");
    // The cache's folder would lie under a file.
    const r = await runCli(["restore"], {
      env: { ...p.env, CACHE_ROOT: path.join(p.dir, "a-file", "tc") },
      cwd: p.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /warning: restore skipped: ENOTDIR: .*\(this machine's filesystem refused it: a file where a folder is expected, or the other way round\)/,
    );
    expect(r.stderr).not.toMatch(/unexpected/);
  });

  it("a working folder whose path is not UTF-8: its kcache.yml is not passed over for the defaults, the error says why (exit 2)", () => {
    const base = tempDir("non-utf8");
    // The folder's name holds the byte 0xff, made by the shell: JavaScript strings cannot carry it.
    const r = spawnSync(
      "bash",
      [
        "-c",
        `d="$(printf '%s/co\\377' "$1")"; mkdir "$d" && cd "$d" && printf 'caches:\\n  - {name: t, kind: triton, path: ./tc}\\n' > kcache.yml && exec "$2" "$3" key`,
        "bash",
        base,
        process.execPath,
        BIN,
      ],
      { env: { PATH: process.env.PATH, HOME: base }, encoding: "utf8" },
    );
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/the working folder's path is not valid UTF-8/);
  });
});
