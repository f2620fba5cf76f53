import type { Config } from "../config/load.js";
import { DEFAULT_GHA_DIR, ghaStore } from "./gha.js";
import { localStore } from "./local.js";
import { DEFAULT_S3, s3Store } from "./s3.js";
import type { Store } from "./store.js";

/** The store a configuration names. Remote backends load their client libraries only when used. */
export function openStore(config: Config): Store {
  const s = config.store;
  switch (s.type) {
    case "local":
      return localStore(s.path);
    case "s3":
      return s3Store({
        ...DEFAULT_S3,
        bucket: s.bucket,
        prefix: s.prefix,
        region: s.region,
        endpoint: s.endpoint,
        forcePathStyle: s.pathStyle,
        conditionalWrites: s.conditionalWrites,
        checksums: s.checksums,
        connectTimeoutMs: s.connectTimeoutMs,
        idleTimeoutMs: s.idleTimeoutMs,
        retry: { ...DEFAULT_S3.retry, attempts: s.retries + 1 },
      });
    case "gha":
      return ghaStore({ timeoutMs: s.timeoutMs, dir: process.env.KCACHE_GHA_DIR || DEFAULT_GHA_DIR });
  }
}
