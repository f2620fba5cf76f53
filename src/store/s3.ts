import { StoreError } from "../errors.js";
import { StalledError } from "./idle-timeout.js";
import { type Client, makeClient, S3Bucket } from "./s3-bucket.js";
import type { S3Settings } from "./s3-settings.js";
import { ObjectNotFound, type Store } from "./store.js";

export { DEFAULT_S3, type S3Settings } from "./s3-settings.js";

/**
 * A store in an S3 bucket, on @aws-sdk/client-s3 (loaded only when used). Large objects stream
 * through multipart uploads (@aws-sdk/lib-storage), which S3 makes visible only when complete.
 * Manifests are created with `If-None-Match: *` where the server honours it; where it does not
 * (older Ceph, s3rver), a HEAD-then-PUT fallback: racing savers can then both write, the last
 * complete manifest wins, and every manifest a restore can see is whole.
 */
export function s3Store(settings: S3Settings): Store {
  const where = `s3://${settings.bucket}/${settings.prefix}${settings.endpoint ? ` at ${settings.endpoint}` : ""}`;
  let bucketPromise: Promise<S3Bucket> | undefined;
  const bucket = () => {
    bucketPromise ??= makeClient(settings).then((c: Client) => new S3Bucket(settings, c));
    return bucketPromise;
  };
  const wrap = async <T>(what: string, fn: (b: S3Bucket) => Promise<T>): Promise<T> => {
    const b = await bucket();
    try {
      return await fn(b);
    } catch (e) {
      if (e instanceof ObjectNotFound || e instanceof StoreError) throw e;
      // A request that got no answer within the idle timeout (after the SDK's retries): stalled.
      if (isTimeout(e)) throw new StalledError(`${where}: ${what}: ${describe(e)} (stalled)`, e);
      throw new StoreError(`${where}: ${what}: ${describe(e)}`, e);
    }
  };
  return {
    description: `S3 store ${where}`,
    capabilities: { listAll: true, delete: true },
    put: (name, body) => wrap(`writing ${name}`, (b) => b.put(name, body)),
    createIfAbsent: (name, body) => wrap(`creating ${name}`, (b) => b.createIfAbsent(name, body)),
    get: (name) => wrap(`reading ${name}`, (b) => b.get(name, where)),
    getRange: (name, offset, length) =>
      wrap(`reading ${name} at ${offset}`, (b) => b.get(name, where, [offset, length])),
    read: (name, maxBytes) => wrap(`reading ${name}`, (b) => b.read(name, where, maxBytes)),
    exists: (name) => wrap(`checking ${name}`, (b) => b.exists(name)),
    list: (prefix) => wrap(`listing ${prefix}`, (b) => b.list(prefix)),
    delete: (name) => wrap(`deleting ${name}`, (b) => b.delete(name)),
  };
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
