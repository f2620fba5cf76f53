import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { pathWithoutZstd } from "../helpers/bare-runner.js";
import { runCli } from "../helpers/cli.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { project } from "../helpers/project.js";

/** The engines this Node has (Node 20: no built-in zstd; the fault suite runs `zlib` on Node 24). */
const ENGINES = ["napi", "system", "wasm"];

describe("Zstandard engines", () => {
  it("each engine restores what each other engine saved, byte for byte", async () => {
    const p = project();
    generateTritonCache(p.cache, { entries: 12, totalBytes: 2_000_000, seed: 4 });
    for (const writer of ENGINES) {
      const saved = await runCli(["save", "--key", `w-${writer}`], {
        env: { ...p.env, KCACHE_ZSTD: writer, KCACHE_STATE_DIR: path.join(p.dir, `sw-${writer}`) },
        cwd: p.dir,
      });
      expect(saved.code, saved.stderr).toBe(0);
      for (const reader of ENGINES) {
        const into = path.join(p.dir, `into-${writer}-${reader}`);
        const r = await runCli(["restore", "--key", `w-${writer}`, "--json"], {
          env: {
            ...p.env,
            KCACHE_ZSTD: reader,
            CACHE_ROOT: into,
            KCACHE_STATE_DIR: path.join(p.dir, `s-${writer}-${reader}`),
          },
          cwd: p.dir,
        });
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout), `${writer} -> ${reader}`).toMatchObject({
          entriesRestored: 12,
          entriesBad: 0,
          cacheHit: true,
        });
        expect(corruptEntries(p.cache, into)).toEqual([]);
      }
    }
  });

  it("with no engine that works, a restore is a miss with one warning naming the fix, before the folder is touched", async () => {
    const p = project();
    generateTritonCache(p.cache, { entries: 4, totalBytes: 200_000, seed: 5 });
    expect((await runCli(["save"], { env: p.env, cwd: p.dir })).code).toBe(0);
    const into = path.join(p.dir, "into");
    const r = await runCli(["restore", "--json"], {
      env: {
        ...p.env,
        PATH: pathWithoutZstd(p.dir),
        KCACHE_ZSTD: "system",
        CACHE_ROOT: into,
        KCACHE_STATE_DIR: path.join(p.dir, "s2"),
      },
      cwd: p.dir,
    });
    expect(r.code).toBe(0);
    const warnings = r.stderr.split("\n").filter((l) => l.includes("warning"));
    expect(warnings, r.stderr).toHaveLength(1);
    expect(warnings[0]).toMatch(/restore skipped: no Zstandard engine works here .*Fix: install zstd/);
    expect(JSON.parse(r.stdout)).toMatchObject({ matchedKey: null });
  });
});
