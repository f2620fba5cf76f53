import type { StoreConfig } from "../config/store-config.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry-strategy.js";

/** An S3 store's settings (kcache.yml's store: with type s3, or $KCACHE_STORE=s3://), and their defaults. */
export interface S3Settings {
  bucket: string;
  /** Prepended to every object name ("ci/kcache/"). */
  prefix: string;
  region: string;
  /** For MinIO, Ceph RGW, Huawei OBS and other S3-compatible servers. */
  endpoint?: string;
  /** Bucket in the path (http://host/bucket/key), as most self-hosted servers want. */
  forcePathStyle: boolean;
  /** auto: probe once whether the server honours If-None-Match on PUT; always / never: trust the setting. */
  conditionalWrites: "auto" | "always" | "never";
  /** when-required: no CRC checksums unless an operation requires them (servers that reject the new ones). */
  checksums: "when-required" | "when-supported";
  connectTimeoutMs: number;
  /** A request that receives nothing for this long fails (no retry). */
  idleTimeoutMs: number;
  retry: RetryPolicy;
  /** Multipart part size; about (3 in flight + 1 filling) x this is held in memory during an upload. */
  partBytes: number;
}

export const DEFAULT_S3: Omit<S3Settings, "bucket" | "region"> = {
  prefix: "",
  forcePathStyle: false,
  conditionalWrites: "auto",
  checksums: "when-supported",
  connectTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  retry: DEFAULT_RETRY_POLICY,
  partBytes: 8 * 1024 * 1024,
};

/** An S3 store's settings from kcache.yml's: what it leaves unset takes DEFAULT_S3, merged here only. */
export function s3Settings(s: Extract<StoreConfig, { type: "s3" }>): S3Settings {
  return {
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
    retry: s.retries === undefined ? DEFAULT_S3.retry : { ...DEFAULT_S3.retry, attempts: s.retries + 1 },
  };
}
