import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

describe("the CLI's npm package", () => {
  it("ships the CLI bundle, its WebAssembly zstd and the hooks, and not the action's 4.8 MB bundle", () => {
    const [pack] = JSON.parse(
      execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--silent"], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "ignore"],
      }).toString(),
    ) as { size: number; files: { path: string }[] }[];
    const files = pack?.files.map((f) => f.path) ?? [];
    for (const needed of [
      "bin/kcache.js",
      "build/cli/main.js",
      "build/cli/pack-worker.js",
      "build/cli/python-probe.js",
      "build/cli/zstd.wasm",
      "python/kcache_hook/sitecustomize.py",
      "python/kcache_pickle/rewrite.py",
      "LICENSE",
    ]) {
      expect(files).toContain(needed);
    }
    // The action (action.yml and dist/) is used from the repository by `uses:`, never from npm.
    expect(files.filter((f) => f.startsWith("dist/") || f.endsWith("action.yml"))).toEqual([]);
    expect(pack?.size).toBeLessThan(1_500_000);
  });
});
