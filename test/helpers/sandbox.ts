import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import type { JobContext } from "../../src/cache/job-context.js";
import { type Config, resolveConfig } from "../../src/config/load.js";
import { jobContext } from "../../src/job/build-context.js";
import { silentLog } from "../../src/log.js";
import { installedStack } from "../fixtures/installed-stack.js";
import { TEST_STACK } from "./test-stack.js";

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A fresh temporary folder, removed after the test. */
export function tempDir(label = "kcache"): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `${label}-`));
  made.push(d);
  return d;
}

export { TEST_STACK };

export interface Sandbox {
  dir: string;
  store: string;
  state: string;
  env: NodeJS.ProcessEnv;
  config(raw?: Record<string, unknown>): Config;
  context(opts?: {
    config?: Config;
    revision?: string;
    env?: NodeJS.ProcessEnv;
    stateDir?: string;
  }): Promise<JobContext>;
}

/** A store, a state folder and an environment of a push to main, all under one temp folder. */
export function sandbox(): Sandbox {
  const dir = tempDir();
  const store = path.join(dir, "store");
  const state = path.join(dir, "state");
  const env: NodeJS.ProcessEnv = {
    HOME: dir,
    PATH: process.env.PATH,
    PYTHONPATH: installedStack(),
    KCACHE_STATE_DIR: state,
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "1111111111111111111111111111111111111111",
  };
  const sb: Sandbox = {
    dir,
    store,
    state,
    env,
    config(raw) {
      return resolveConfig(
        raw ?? {
          caches: [{ name: "triton", kind: "triton", path: path.join(dir, "triton") }],
          store: { path: store },
          key: { prefix: "bench" },
        },
        "kcache.yml",
        env,
        dir,
      );
    },
    async context(opts = {}) {
      const e: NodeJS.ProcessEnv = { ...env, ...opts.env };
      if (opts.stateDir) e.KCACHE_STATE_DIR = opts.stateDir;
      return jobContext({
        config: opts.config ?? sb.config(),
        log: silentLog(),
        env: e,
        cwd: dir,
        revision: opts.revision ?? e.GITHUB_SHA,
        stack: TEST_STACK,
      });
    },
  };
  return sb;
}
