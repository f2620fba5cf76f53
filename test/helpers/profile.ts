import path from "node:path";
import { resolveConfig } from "../../src/config/load.js";
import { buildJob } from "../../src/job/build-job.js";
import { silentLog } from "../../src/log.js";
import { runProfile } from "../../src/pipeline/run-profile.js";
import { type Sandbox, TEST_STACK } from "./sandbox.js";

/** Runs one profile in the sandbox (its folder is the working directory) and returns the report. */
export async function runSandboxProfile(
  sb: Sandbox,
  profile: Record<string, unknown>,
  opts: {
    restore?: boolean;
    save?: boolean;
    env?: NodeJS.ProcessEnv;
    stateDir?: string;
    cachePath?: string;
  } = {},
) {
  const env: NodeJS.ProcessEnv = { ...sb.env, ...opts.env };
  if (opts.stateDir) env.KCACHE_STATE_DIR = opts.stateDir;
  const config = resolveConfig(
    {
      caches: [{ name: "triton", kind: "triton", path: opts.cachePath ?? path.join(sb.dir, "triton") }],
      store: { path: sb.store },
      key: { prefix: "run" },
      profiles: { p: profile },
    },
    "kcache.yml",
    env,
    sb.dir,
  );
  const log = silentLog();
  const job = await buildJob({
    config,
    overrides: { profile: "p" },
    log,
    env,
    cwd: sb.dir,
    stack: TEST_STACK,
  });
  const report = await runProfile({
    job,
    outDir: path.join(sb.dir, "out"),
    restore: opts.restore,
    save: opts.save,
    echo: null,
  });
  return { report, log };
}
