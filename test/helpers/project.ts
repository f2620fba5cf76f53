import fs from "node:fs";
import path from "node:path";
import { installedStack } from "../fixtures/installed-stack.js";
import { tempDir } from "./sandbox.js";

export interface Project {
  dir: string;
  cache: string;
  store: string;
  env: NodeJS.ProcessEnv;
}

/**
 * A project folder with a kcache.yml (one Triton cache at $CACHE_ROOT, a local store), a state
 * folder and the environment of a push to main. `yml` replaces the config; `store` puts the store
 * elsewhere (a size-limited filesystem, say).
 */
export function project(
  opts: { yml?: string; store?: string; cache?: string; prefix?: string } = {},
): Project {
  const dir = tempDir("kcache-proj");
  const cache = opts.cache ?? path.join(dir, "triton-cache");
  const store = opts.store ?? path.join(dir, "store");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    opts.yml ??
      `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  path: ${store}\nkey:\n  prefix: ${opts.prefix ?? "trust"}\n`,
  );
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    PYTHONPATH: installedStack(),
    HOME: dir,
    CACHE_ROOT: cache,
    KCACHE_STATE_DIR: path.join(dir, "state"),
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "f".repeat(40),
  };
  return { dir, cache, store, env };
}
