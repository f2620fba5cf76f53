import type { Config } from "../config/load.js";
import { DEFAULT_GHA_TIMEOUT_MS, ghaStore } from "./gha.js";
import { localStore } from "./local.js";
import { DEFAULT_S3, s3Store } from "./s3.js";
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
    case "s3":
      return latchStalls(
        s3Store({
          ...DEFAULT_S3,
          bucket: s.bucket,
          prefix: s.prefix,
          region: s.region,
          endpoint: s.endpoint,
          forcePathStyle: s.pathStyle ?? DEFAULT_S3.forcePathStyle,
          conditionalWrites: s.conditionalWrites ?? DEFAULT_S3.conditionalWrites,
          checksums: s.checksums ?? DEFAULT_S3.checksums,
          connectTimeoutMs: s.connectTimeoutMs ?? DEFAULT_S3.connectTimeoutMs,
          idleTimeoutMs: s.idleTimeoutMs ?? DEFAULT_S3.idleTimeoutMs,
          retry:
            s.retries === undefined ? DEFAULT_S3.retry : { ...DEFAULT_S3.retry, attempts: s.retries + 1 },
        }),
      );
    case "gha":
      return latchStalls(
        ghaStore({
          timeoutMs: s.timeoutMs ?? DEFAULT_GHA_TIMEOUT_MS,
          idleTimeoutMs: s.idleTimeoutMs,
          env,
        }),
      );
  }
}
