import path from "node:path";
import { describe, expect, it } from "vitest";
import { pathLineCaches } from "../../src/job/path-lines.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const env = { HOME: "/home/runner" };

describe("actions/cache-style path lines", () => {
  it("make one cache per line: ~ and relative paths resolved, a glob's folder the cache and its rest the pattern, ! lines excluded everywhere", () => {
    const caches = pathLineCaches(
      ["~/.triton/cache", "build/inductor", "~/.cache/*/wheels", "!~/.cache/**/*.lock", "", "# a comment"],
      "auto",
      "path",
      env,
      "/work/repo",
    );
    expect(caches).toEqual([
      expect.objectContaining({
        name: "path-1",
        kind: "auto",
        path: "/home/runner/.triton/cache",
        env: "TRITON_CACHE_DIR", // Triton's default folder: known even while it is empty
      }),
      expect.objectContaining({ name: "path-2", path: "/work/repo/build/inductor" }),
      expect.objectContaining({ name: "path-3", path: "/home/runner/.cache", include: ["*/wheels"] }),
    ]);
    for (const c of caches) expect(c.exclude).toEqual(["/home/runner/.cache/**/*.lock"]);
    expect(caches[0]?.include).toBeUndefined();
  });

  it("with kind auto, knows the variable from the path even where the folder is empty, or from its layout", () => {
    const at = (line: string, e: NodeJS.ProcessEnv = env) =>
      pathLineCaches([line], "auto", "path", e, "/w")[0]?.env;
    expect(at("~/.triton/cache")).toBe("TRITON_CACHE_DIR");
    expect(at("/opt/tc", { ...env, TRITON_CACHE_DIR: "/opt/tc" })).toBe("TRITON_CACHE_DIR");
    expect(at("/x/.triton/cache", { ...env, TRITON_HOME: "/x" })).toBe("TRITON_CACHE_DIR");
    expect(at("/tmp/torchinductor_ci", { ...env, USER: "ci" })).toBe("TORCHINDUCTOR_CACHE_DIR");
    expect(at("/opt/ind", { ...env, TORCHINDUCTOR_CACHE_DIR: "/opt/ind" })).toBe("TORCHINDUCTOR_CACHE_DIR");
    expect(at(tempDir("empty-folder"))).toBeUndefined();
    // Two lines that would both be Triton's folder: only the first is pointed at.
    const two = pathLineCaches(
      ["~/.triton/cache", "/opt/tc"],
      "auto",
      "path",
      { ...env, TRITON_CACHE_DIR: "/opt/tc" },
      "/w",
    );
    expect(two.map((c) => c.env)).toEqual(["TRITON_CACHE_DIR", undefined]);
  });

  it("isolate where kcache cannot know the folder's variable is refused at load, naming the path and the fix", async () => {
    const folder = tempDir("unknown-kind");
    const { jobConfig } = await import("../../src/job/build-job.js");
    const { silentLog } = await import("../../src/log.js");
    const { resolveConfig } = await import("../../src/config/load.js");
    const base = resolveConfig(
      { caches: [{ name: "t", kind: "triton", path: "/tmp/t" }] },
      "kcache.yml",
      env,
      "/w",
    );
    const job = (paths: string[], kind: "auto" | "triton", isolate: boolean) =>
      jobConfig({ config: base, overrides: { paths, kind, isolate }, log: silentLog(), env, cwd: "/w" });
    await expect(job([folder], "auto", true)).rejects.toThrow(
      new RegExp(`path ${folder}: isolate needs the variable .* give kind: triton or kind: inductor`),
    );
    await expect(job([folder], "triton", true)).resolves.toBeTruthy();
    await expect(job([folder], "auto", false)).resolves.toBeTruthy();
    await expect(job(["~/.triton/cache"], "auto", true)).resolves.toBeTruthy();
    const dir = resolveConfig(
      { caches: [{ name: "wheels", kind: "dir", path: folder, isolate: true }] },
      "kcache.yml",
      env,
      "/w",
    );
    await expect(jobConfig({ config: dir, log: silentLog(), env, cwd: "/w" })).rejects.toThrow(
      /kcache\.yml: caches\[0\] \(wheels\): isolate needs .* add env: <VARIABLE> to the cache/,
    );
  });

  it("with kind triton, names the caches by kind and points TRITON_CACHE_DIR at the first", () => {
    const [first, second] = pathLineCaches(["/a/tc", "/b/tc"], "triton", "path", env, "/work");
    expect(first).toMatchObject({ name: "triton", kind: "triton", env: "TRITON_CACHE_DIR" });
    expect(second).toMatchObject({ name: "triton-2", env: undefined });
  });

  it("refuses only exclusions, a glob at the home folder, and overlapping paths, naming the input", () => {
    expect(() => pathLineCaches(["!x.lock"], "auto", "input path", env, "/w")).toThrow(
      /input path: only "!" lines/,
    );
    expect(() => pathLineCaches(["~/*"], "auto", "input path", env, "/w")).toThrow(
      /input path \/home\/runner: \/home\/runner is the home folder/,
    );
    expect(() => pathLineCaches(["/c", "/c/sub"], "auto", "--path", env, "/w")).toThrow(
      /--path \/c\/sub: \/c\/sub overlaps --path \/c/,
    );
  });

  it("the CLI takes the same overrides: --key, --path and --restore-key shape the key and restore order", async () => {
    const dir = tempDir("cli-overrides");
    const r = await runCli(
      ["key", "--json", "--key", "mine", "--path", "~/tc", "--restore-key", "old-", "--revision", "r1"],
      { env: { PATH: process.env.PATH, HOME: dir, GITHUB_REF: "refs/heads/main" }, cwd: dir },
    );
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.key).toMatch(/^mine-[0-9a-f]{12}-r1$/);
    expect(out.restoreOrder.map((s: { value: string }) => s.value)).toEqual([
      out.key,
      out.key.replace(/r1$/, ""),
      "old-",
    ]);
    expect(path.isAbsolute(dir)).toBe(true);
  });

  it("a kind changed between save and restore restores nothing, and says why", async () => {
    const dir = tempDir("kind-changed");
    const e = {
      PATH: process.env.PATH,
      HOME: dir,
      GITHUB_REF: "refs/heads/main",
      KCACHE_STORE: path.join(dir, "store"),
      KCACHE_STATE_DIR: path.join(dir, "state"),
    };
    generateTritonCache(path.join(dir, "tc"), { entries: 4, totalBytes: 20_000 });
    const saved = await runCli(["save", "--key", "k", "--path", "~/tc", "--revision", "r1"], {
      env: e,
      cwd: dir,
    });
    expect(saved.code, saved.stderr).toBe(0);
    const restored = await runCli(
      ["restore", "--json", "--key", "k", "--path", "~/elsewhere", "--kind", "triton", "--revision", "r1"],
      { env: { ...e, KCACHE_STATE_DIR: path.join(dir, "state2") }, cwd: dir },
    );
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({ entriesRestored: 0 });
    expect(restored.stderr).toMatch(
      /holds no cache named triton \(kind triton\), only path-1 \(kind triton\): the cache was renamed or its kind changed/,
    );
  });
});
