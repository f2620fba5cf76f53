import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { makeFolders } from "../src/make-folders.js";
import { generateTritonCache } from "./fixtures/triton-cache.js";
import { type CliResult, startCli } from "./helpers/cli.js";
import { project } from "./helpers/project.js";
import { tempDir } from "./helpers/sandbox.js";

/** kcache as a user runs it, ended (and failed) where it has not answered within a minute. */
async function answered(args: string[], opts: { env: NodeJS.ProcessEnv; cwd: string }): Promise<CliResult> {
  const run = startCli(args, opts);
  const timer = setTimeout(run.kill, 60_000);
  const r = await run.promise;
  clearTimeout(timer);
  expect(r.code, `kcache ${args.join(" ")} never answered (killed): ${r.stderr}`).not.toBeNull();
  return r;
}

describe("the folders kcache makes", () => {
  it("makes a path's missing folders, takes those that exist, and refuses a file in the way, as Node's recursive mkdir", () => {
    const dir = tempDir("make-folders");
    const deep = path.join(dir, "a", "b", "c");
    makeFolders(deep);
    expect(fs.statSync(deep).isDirectory()).toBe(true);
    makeFolders(deep);
    makeFolders(path.join(dir, "a"));
    fs.writeFileSync(path.join(dir, "file"), "");
    expect(() => makeFolders(path.join(dir, "file"))).toThrow(expect.objectContaining({ code: "EEXIST" }));
    expect(() => makeFolders(path.join(dir, "file", "x"))).toThrow(
      expect.objectContaining({ code: "ENOTDIR" }),
    );
  });

  it("fails, naming the folder, where the filesystem refuses folders though their parent exists (/proc)", () => {
    // Node's recursive mkdir loops for ever here.
    expect(() => makeFolders("/proc/self/kcache-x/y")).toThrow(
      expect.objectContaining({ code: "ENOENT", path: "/proc/self/kcache-x" }),
    );
  });

  it("kcache key, and a save, with the state folder and the store under /proc: they answer, warning, instead of spinning", async () => {
    const p = project({ store: "/proc/self/kcache-store" });
    generateTritonCache(p.cache, { entries: 4, totalBytes: 64 * 1024 });
    const env = { ...p.env, KCACHE_STATE_DIR: "/proc/self/kcache-state" };
    const key = await answered(["key"], { env, cwd: p.dir });
    expect(key.code, key.stderr).toBe(0);
    expect(key.stdout).toMatch(/^trust-[0-9a-f]{12}-/);
    const save = await answered(["save"], { env, cwd: p.dir });
    expect(save.code, save.stderr).toBe(0);
    expect(save.stderr).toMatch(/warning: .*kcache-store/);
  });
});
