import type { Config } from "../config/resolve.js";
import { readOnlyRequested } from "../environment.js";
import { DEFAULT_GHA_IDLE_MS, DEFAULT_GHA_TIMEOUT_MS, ghaStore } from "./gha.js";
import { localStore } from "./local.js";
import { ReadOnlyMode, readOnlyStore } from "./read-only.js";
import { s3Store } from "./s3.js";
import { s3Settings } from "./s3-settings.js";
import { latchStalls } from "./stall-latch.js";
import type { Store } from "./store.js";

/**
 * The store a configuration names, `env` giving GitHub's cache store the runner's variables, keeping
 * `readOnly` (store/read-only.ts): a job's one decision, else the one kcache.yml and
 * $KCACHE_READ_ONLY declare. Remote backends load their client libraries only when used.
 */
export function openStore(
  config: Config,
  env: NodeJS.ProcessEnv,
  readOnly: ReadOnlyMode = declaredReadOnly(config, env),
): Store {
  return readOnlyStore(backend(config, env), readOnly);
}

/**
 * Read-only mode as declared before any command line: $KCACHE_READ_ONLY, else kcache.yml's
 * store.read-only (the CLI's --read-only is entered by the command that takes it).
 */
export function declaredReadOnly(config: Config, env: NodeJS.ProcessEnv): ReadOnlyMode {
  const store = config.store.readOnly ? `store.read-only in ${config.source}` : null;
  return new ReadOnlyMode(readOnlyRequested(env) ?? store);
}

function backend(config: Config, env: NodeJS.ProcessEnv): Store {
  const s = config.store;
  switch (s.type) {
    case "local":
      return localStore(s.path);
    case "s3": {
      const settings = s3Settings(s);
      return { ...latchStalls(s3Store(settings)), idleTimeoutMs: settings.idleTimeoutMs };
    }
    case "gha": {
      const store = ghaStore({
        timeoutMs: s.timeoutMs ?? DEFAULT_GHA_TIMEOUT_MS,
        idleTimeoutMs: s.idleTimeoutMs,
        env,
      });
      return { ...latchStalls(store), idleTimeoutMs: s.idleTimeoutMs ?? DEFAULT_GHA_IDLE_MS };
    }
  }
}
