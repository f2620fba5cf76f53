import type { JobContext } from "../../src/cache/job-context.js";
import { resolveConfig } from "../../src/config/load.js";
import { jobContext } from "../../src/job/build-context.js";
import { silentLog } from "../../src/log.js";
import type { StackFingerprint } from "../../src/stack/fingerprint.js";
import type { Store } from "../../src/store/store.js";
import { TEST_STACK } from "./test-stack.js";

/** A job on the default branch with one Triton cache at `cache`, saving to and restoring from `store`. */
export function storeContext(
  store: Store,
  cache: string,
  state: string,
  opts: {
    revision?: string;
    prefix?: string;
    stack?: StackFingerprint;
    /** kcache.yml's `save:` section, as written there. */
    save?: Record<string, unknown>;
    /** GITHUB_REF of the run (the default branch's by default). */
    ref?: string;
    /** The cache's kind (triton by default). */
    kind?: "triton" | "inductor" | "dir" | "auto";
    /** Restored lazily (restore: lazy): its packs hold each entry in frames of its own. */
    lazy?: boolean;
  } = {},
): Promise<JobContext> {
  const config = resolveConfig(
    {
      caches: [
        {
          name: "triton",
          kind: opts.kind ?? "triton",
          path: cache,
          ...(opts.lazy ? { restore: "lazy" } : {}),
        },
      ],
      key: { prefix: opts.prefix ?? "conf" },
      ...(opts.save ? { save: opts.save } : {}),
    },
    "kcache.yml",
    {},
    "/",
  );
  return jobContext({
    config,
    log: silentLog(),
    env: { KCACHE_STATE_DIR: state, GITHUB_REF: opts.ref ?? "refs/heads/main" },
    cwd: "/",
    revision: opts.revision ?? "r".repeat(40),
    stack: opts.stack ?? TEST_STACK,
    store,
  });
}
