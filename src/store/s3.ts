import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { quietAwsSdkNotice } from "../environment.js";
import { StoreError } from "../errors.js";
import { StalledError, withIdleTimeout } from "./idle-timeout.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy, StoreRetryStrategy } from "./retry-strategy.js";
import { ObjectNotFound, type Store, type StoredObject } from "./store.js";

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

/**
 * A store in an S3 bucket, on @aws-sdk/client-s3 (loaded only when used). Large objects stream
 * through multipart uploads (@aws-sdk/lib-storage), which S3 makes visible only when complete.
 * Manifests are created with `If-None-Match: *` where the server honours it; where it does not
 * (older Ceph, s3rver), a HEAD-then-PUT fallback: racing savers can then both write, the last
 * complete manifest wins, and every manifest a restore can see is whole.
 */
export function s3Store(settings: S3Settings): Store {
  const where = `s3://${settings.bucket}/${settings.prefix}${settings.endpoint ? ` at ${settings.endpoint}` : ""}`;
  const key = (name: string) => `${settings.prefix}${name}`;
  let clientPromise: Promise<Client> | undefined;
  const client = () => {
    clientPromise ??= makeClient(settings);
    return clientPromise;
  };
  let conditional: Promise<boolean> | undefined;

  const wrap = async <T>(what: string, fn: (c: Client) => Promise<T>): Promise<T> => {
    const c = await client();
    try {
      return await fn(c);
    } catch (e) {
      if (e instanceof ObjectNotFound || e instanceof StoreError) throw e;
      // A request that got no answer within the idle timeout (after the SDK's retries): stalled.
      if (isTimeout(e)) throw new StalledError(`${where}: ${what}: ${describe(e)} (stalled)`, e);
      throw new StoreError(`${where}: ${what}: ${describe(e)}`, e);
    }
  };

  const store: Store = {
    description: `S3 store ${where}`,
    capabilities: { listAll: true, delete: true },

    put: (name, body) =>
      wrap(`writing ${name}`, async (c) => {
        const upload = new c.lib.Upload({
          client: c.s3,
          params: { Bucket: settings.bucket, Key: key(name), Body: body },
          partSize: settings.partBytes,
          queueSize: 3,
          leavePartsOnError: false,
        });
        let size = 0;
        upload.on("httpUploadProgress", (p) => {
          size = Math.max(size, p.loaded ?? 0);
        });
        await upload.done();
        const head = await c.s3.send(
          new c.sdk.HeadObjectCommand({ Bucket: settings.bucket, Key: key(name) }),
        );
        return { size: head.ContentLength ?? size };
      }),

    createIfAbsent: (name, body) =>
      wrap(`creating ${name}`, async (c) => {
        conditional ??=
          settings.conditionalWrites === "auto"
            ? probeConditional(c, settings)
            : Promise.resolve(settings.conditionalWrites === "always");
        if (await conditional) {
          try {
            await c.s3.send(
              new c.sdk.PutObjectCommand({
                Bucket: settings.bucket,
                Key: key(name),
                Body: body,
                IfNoneMatch: "*",
              }),
            );
            return true;
          } catch (e) {
            const status = statusOf(e);
            if (status === 412 || status === 409) return false;
            throw e;
          }
        }
        if (await exists(c, settings, key(name))) return false;
        await c.s3.send(new c.sdk.PutObjectCommand({ Bucket: settings.bucket, Key: key(name), Body: body }));
        return true;
      }),

    get: (name) =>
      wrap(`reading ${name}`, async (c) => {
        try {
          const r = await c.s3.send(new c.sdk.GetObjectCommand({ Bucket: settings.bucket, Key: key(name) }));
          return withIdleTimeout(r.Body as Readable, settings.idleTimeoutMs, `${where}: reading ${name}`);
        } catch (e) {
          if (statusOf(e) === 404) throw new ObjectNotFound(name);
          throw e;
        }
      }),

    read: (name) =>
      wrap(`reading ${name}`, async (c) => {
        try {
          const r = await c.s3.send(new c.sdk.GetObjectCommand({ Bucket: settings.bucket, Key: key(name) }));
          return await buffer(
            withIdleTimeout(r.Body as Readable, settings.idleTimeoutMs, `${where}: reading ${name}`),
          );
        } catch (e) {
          if (statusOf(e) === 404) return null;
          throw e;
        }
      }),

    exists: (name) => wrap(`checking ${name}`, (c) => exists(c, settings, key(name))),

    list: (prefix) =>
      wrap(`listing ${prefix}`, async (c) => {
        const out: StoredObject[] = [];
        let token: string | undefined;
        do {
          const r = await c.s3.send(
            new c.sdk.ListObjectsV2Command({
              Bucket: settings.bucket,
              Prefix: key(prefix),
              ContinuationToken: token,
            }),
          );
          for (const o of r.Contents ?? []) {
            if (!o.Key) continue;
            out.push({
              name: o.Key.slice(settings.prefix.length),
              size: o.Size ?? 0,
              modified: o.LastModified ?? new Date(0),
            });
          }
          token = r.IsTruncated ? r.NextContinuationToken : undefined;
        } while (token);
        return out.sort((a, b) => b.modified.getTime() - a.modified.getTime() || (a.name < b.name ? 1 : -1));
      }),

    delete: (name) =>
      wrap(`deleting ${name}`, async (c) => {
        await c.s3.send(new c.sdk.DeleteObjectCommand({ Bucket: settings.bucket, Key: key(name) }));
      }),
  };
  return store;
}

type Sdk = typeof import("@aws-sdk/client-s3");
type Lib = typeof import("@aws-sdk/lib-storage");
interface Client {
  sdk: Sdk;
  lib: Lib;
  s3: InstanceType<Sdk["S3Client"]>;
}

async function makeClient(settings: S3Settings): Promise<Client> {
  quietAwsSdkNotice();
  const [sdk, lib, { NodeHttpHandler }] = await Promise.all([
    import("@aws-sdk/client-s3"),
    import("@aws-sdk/lib-storage"),
    import("@smithy/node-http-handler"),
  ]);
  const s3 = new sdk.S3Client({
    region: settings.region,
    endpoint: settings.endpoint,
    forcePathStyle: settings.forcePathStyle,
    requestChecksumCalculation: settings.checksums === "when-required" ? "WHEN_REQUIRED" : "WHEN_SUPPORTED",
    responseChecksumValidation: settings.checksums === "when-required" ? "WHEN_REQUIRED" : "WHEN_SUPPORTED",
    retryStrategy: new StoreRetryStrategy(settings.retry),
    requestHandler: new NodeHttpHandler({
      connectionTimeout: settings.connectTimeoutMs,
      requestTimeout: settings.idleTimeoutMs,
      // Without this a timed-out request only logs a warning and waits on.
      throwOnRequestTimeout: true,
    }),
  });
  return { sdk, lib, s3 };
}

async function exists(c: Client, settings: S3Settings, k: string): Promise<boolean> {
  try {
    await c.s3.send(new c.sdk.HeadObjectCommand({ Bucket: settings.bucket, Key: k }));
    return true;
  } catch (e) {
    if (statusOf(e) === 404) return false;
    throw e;
  }
}

/**
 * Whether the server refuses a second `PUT If-None-Match: *` of one name. Servers that ignore the
 * header overwrite silently; only a second write tells.
 */
async function probeConditional(c: Client, settings: S3Settings): Promise<boolean> {
  const probe = `${settings.prefix}.kcache-probe/${randomUUID()}`;
  const put = () =>
    c.s3.send(
      new c.sdk.PutObjectCommand({ Bucket: settings.bucket, Key: probe, Body: "probe", IfNoneMatch: "*" }),
    );
  try {
    await put();
    try {
      await put();
      return false;
    } catch (e) {
      const status = statusOf(e);
      if (status === 412 || status === 409) return true;
      throw e;
    }
  } catch (e) {
    const status = statusOf(e);
    // A server that rejects the header outright (501 NotImplemented, 400) cannot create conditionally.
    if (status === 501 || status === 400) return false;
    throw e;
  } finally {
    await c.s3.send(new c.sdk.DeleteObjectCommand({ Bucket: settings.bucket, Key: probe })).catch(() => {});
  }
}

function statusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function isTimeout(e: unknown): boolean {
  const err = e as { name?: string; code?: string; message?: string };
  return (
    err.name === "TimeoutError" ||
    err.code === "ETIMEDOUT" ||
    err.code === "ECONNRESET_TIMEOUT" ||
    /timed? ?out|RequestTimeout/i.test(`${err.name ?? ""} ${err.message ?? ""}`)
  );
}

function describe(e: unknown): string {
  const err = e as {
    name?: string;
    message?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const status = err.$metadata?.httpStatusCode;
  return [
    err.name && err.name !== "Error" ? err.name : null,
    status ? `HTTP ${status}` : null,
    err.code,
    err.message,
  ]
    .filter(Boolean)
    .join(": ");
}
