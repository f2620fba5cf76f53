import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { quietAwsSdkNotice } from "../environment.js";
import { StoreError } from "../errors.js";
import { withIdleTimeout } from "./idle-timeout.js";
import { type DownloadPart, isReset, resumable } from "./resumable-download.js";

/** Ranged requests a download may resume with after connection resets (within one idle timeout). */
const RESUMES = 5;

/** The first response of a download; a connection reset before it answered is tried again (twice at most). */
async function firstPart(get: () => Promise<DownloadPart>): Promise<DownloadPart> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await get();
    } catch (e) {
      if (attempt >= 2 || !isReset(e)) throw e;
    }
  }
}

import { StoreRetryStrategy } from "./retry-strategy.js";
import type { S3Settings } from "./s3-settings.js";
import { ObjectFault, ObjectNotFound, type StoredObject } from "./store.js";

/**
 * One bucket and prefix as kcache uses them, on @aws-sdk/client-s3: each store operation as its S3
 * requests. Errors are the SDK's; s3.ts turns them into store errors.
 */
export class S3Bucket {
  private conditional: Promise<boolean> | undefined;

  constructor(
    private readonly settings: S3Settings,
    private readonly c: Client,
  ) {}

  private key(name: string): string {
    return `${this.settings.prefix}${name}`;
  }

  /** A multipart upload (visible only when complete); its size as the server has it. */
  async put(name: string, body: Readable): Promise<{ size: number }> {
    const { c, settings } = this;
    const upload = new c.lib.Upload({
      client: c.s3,
      params: { Bucket: settings.bucket, Key: this.key(name), Body: body },
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
      new c.sdk.HeadObjectCommand({ Bucket: settings.bucket, Key: this.key(name) }),
    );
    return { size: head.ContentLength ?? size };
  }

  /** `PUT If-None-Match: *` where the server honours it, else HEAD then PUT. */
  async createIfAbsent(name: string, body: Buffer): Promise<boolean> {
    const { c, settings } = this;
    this.conditional ??=
      settings.conditionalWrites === "auto"
        ? probeConditional(c, settings)
        : Promise.resolve(settings.conditionalWrites === "always");
    const put = (extra: { IfNoneMatch?: string }) =>
      c.s3.send(
        new c.sdk.PutObjectCommand({ Bucket: settings.bucket, Key: this.key(name), Body: body, ...extra }),
      );
    if (await this.conditional) {
      try {
        await put({ IfNoneMatch: "*" });
        return true;
      } catch (e) {
        const status = statusOf(e);
        if (status === 412 || status === 409) return false;
        throw e;
      }
    }
    if (await this.exists(name)) return false;
    await put({});
    return true;
  }

  /**
   * The object's bytes, bounded by the idle timeout, resumed by ranged requests after a connection
   * reset (resumable-download.ts); null when there is no such object.
   */
  async body(name: string, where: string, range?: [number, number]): Promise<Readable | null> {
    const { c, settings } = this;
    // The bytes from `offset` on (of the range, where one is asked for), the same version after the first.
    const bytes = (offset: number) =>
      range
        ? `bytes=${range[0] + offset}-${range[0] + range[1] - 1}`
        : offset > 0
          ? `bytes=${offset}-`
          : null;
    const part = async (offset: number, etag?: string): Promise<DownloadPart> => {
      const asked = bytes(offset);
      const r = await c.s3.send(
        new c.sdk.GetObjectCommand({
          Bucket: settings.bucket,
          Key: this.key(name),
          ...(asked ? { Range: asked, ...(offset > 0 && etag ? { IfMatch: etag } : {}) } : {}),
        }),
      );
      const body = r.Body as Readable & { socket?: { setTimeout(ms: number): void } };
      // From here the idle guard judges the body, counting only time kcache waits for bytes: the
      // SDK's socket timer would also count time kcache itself is busy (a loaded machine) as a stall.
      body.socket?.setTimeout(0);
      return { body, length: r.ContentLength, etag: r.ETag };
    };
    try {
      const first = await firstPart(() => part(0));
      const what = `${where}: reading ${name}`;
      // A server that ignores Range answers with the whole object: never taken for the range.
      if (range && first.length !== range[1]) {
        first.body.destroy();
        const message = `${what}: asked for ${range[1]} bytes at ${range[0]}, given ${first.length}`;
        // Fewer bytes than asked: the object ends inside the range (short), its own fault (store.ts, isObjectFault).
        if (first.length !== undefined && first.length < range[1]) throw new ObjectFault(message);
        throw new StoreError(message);
      }
      const whole = resumable(
        { ...first, length: first.length },
        { what, attempts: RESUMES, windowMs: settings.idleTimeoutMs, reopen: part },
      );
      return withIdleTimeout(whole, settings.idleTimeoutMs, what);
    } catch (e) {
      if (statusOf(e) === 404) return null;
      // 416 InvalidRange: the range starts past the object's end (a short object), as a local store's fault.
      if (range && statusOf(e) === 416)
        throw new ObjectFault(
          `${where}: reading ${name}: ${range[1]} bytes at ${range[0]}: past the object's end`,
        );
      throw e;
    }
  }

  async get(name: string, where: string, range?: [number, number]): Promise<Readable> {
    const body = await this.body(name, where, range);
    if (!body) throw new ObjectNotFound(name);
    return body;
  }

  /** A small object whole; one past `maxBytes` is refused (ObjectFault) as its bytes come, never buffered. */
  async read(name: string, where: string, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer | null> {
    const body = await this.body(name, where);
    if (!body) return null;
    if (maxBytes === Number.POSITIVE_INFINITY) return await buffer(body);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        body.destroy();
        throw new ObjectFault(
          `${where}: ${name}: more than the ${maxBytes} bytes its reader allows; refused`,
        );
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  }

  async exists(name: string): Promise<boolean> {
    return exists(this.c, this.settings, this.key(name));
  }

  /** Every object under `prefix`, newest first, page by page. */
  async list(prefix: string): Promise<StoredObject[]> {
    const { c, settings } = this;
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const r = await c.s3.send(
        new c.sdk.ListObjectsV2Command({
          Bucket: settings.bucket,
          Prefix: this.key(prefix),
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
  }

  async delete(name: string): Promise<void> {
    const { c, settings } = this;
    await c.s3.send(new c.sdk.DeleteObjectCommand({ Bucket: settings.bucket, Key: this.key(name) }));
  }
}

type Sdk = typeof import("@aws-sdk/client-s3");
type Lib = typeof import("@aws-sdk/lib-storage");
export interface Client {
  sdk: Sdk;
  lib: Lib;
  s3: InstanceType<Sdk["S3Client"]>;
}

export async function makeClient(settings: S3Settings): Promise<Client> {
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
  // Only a probe that was written is deleted: a store that refused the write (403: no write key) is
  // asked nothing more.
  let written = false;
  try {
    await put();
    written = true;
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
    if (written)
      await c.s3.send(new c.sdk.DeleteObjectCommand({ Bucket: settings.bucket, Key: probe })).catch(() => {});
  }
}

function statusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}
