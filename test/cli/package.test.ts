import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/sandbox.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PACKAGE = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
  version: string;
  scripts: Record<string, string>;
};

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
      "build/cli/standard-streams.js",
      "build/cli/zstd.wasm",
      "python/kcache_hook/sitecustomize.py",
      "python/kcache_pickle/rewrite.py",
      "schema/kcache.schema.json",
      "LICENSE",
    ]) {
      expect(files).toContain(needed);
    }
    // The action (action.yml and dist/) is used from the repository by `uses:`, never from npm.
    expect(files.filter((f) => f.startsWith("dist/") || f.endsWith("action.yml"))).toEqual([]);
    expect(pack?.size).toBeLessThan(1_500_000);
  });

  it("runs no script on a user's install: npm pack builds what it packs instead", () => {
    // prepare ran `npm run build` wherever npm installs from a folder or a git URL: tsc and esbuild,
    // and every devDependency installed for them, on the user's machine.
    const onInstall = ["preinstall", "install", "postinstall", "prepare"];
    expect(Object.keys(PACKAGE.scripts).filter((s) => onInstall.includes(s))).toEqual([]);
    expect(PACKAGE.scripts.prepack).toBe("npm run build");
  });

  it("packed and installed offline into an empty folder, runs", () => {
    const dir = tempDir("pack-install");
    // Built already by the suite's setup: what prepack would build.
    const tgz = execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", dir], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "ignore"],
    })
      .toString()
      .trim();
    const app = path.join(dir, "app");
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, "package.json"), '{"name":"app","private":true}\n');
    execFileSync(
      "npm",
      ["install", "--offline", "--omit=optional", "--no-audit", "--no-fund", path.join(dir, tgz)],
      { cwd: app, stdio: "ignore" },
    );
    const r = spawnSync(path.join(app, "node_modules", ".bin", "kcache"), ["--version"], {
      encoding: "utf8",
    });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe(PACKAGE.version);
  });

  it("a copy that was never built says how to build it, not a module stack", () => {
    const copy = tempDir("unbuilt");
    fs.mkdirSync(path.join(copy, "bin"));
    fs.copyFileSync(path.join(ROOT, "bin", "kcache.js"), path.join(copy, "bin", "kcache.js"));
    fs.copyFileSync(path.join(ROOT, "package.json"), path.join(copy, "package.json"));
    const r = spawnSync(process.execPath, [path.join(copy, "bin", "kcache.js"), "key"], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /kcache: error: this copy of kcache is not built .*run `npm ci && npm run build`/,
    );
    expect(r.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND/);
  });
});
