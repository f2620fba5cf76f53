import type { Config } from "../config/resolve.js";
import { DEFAULT_GHA_IDLE_MS, DEFAULT_GHA_TIMEOUT_MS, ghaStore } from "./gha.js";
import { localStore } from "./local.js";
import { s3Store } from "./s3.js";
import { s3Settings } from "./s3-settings.js";
import { latchStalls } from "./stall-latch.js";
import type { Store } from "./store.js";

/**
 * The store a configuration names, `env` giving GitHub's cache store the runner's variables. Remote
 * backends load their client libraries only when used.
 */
export function openStore(config: Config, env: NodeJS.ProcessEnv): Store {
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
