import type { Readable } from "node:stream";
import type { GhaEnvironment } from "../environment.js";
import { StoreError } from "../errors.js";
import { Transfer } from "./gha-transfer.js";
import { StalledError, withIdleTimeout } from "./idle-timeout.js";
import { type DownloadPart, resumable } from "./resumable-download.js";

const SERVICE = "twirp/github.actions.results.api.v1.CacheService/";
/** The slowest a transfer may go on average before it fails: 1 MB/s (a runner's link is 100x that). */
const MIN_BYTES_PER_S = 1_000_000;
/**
 * Azure's client retries an error status or a broken connection: twice, after 0.3 and 0.9 s (its
 * default waits 4 s, growing, four times: 16-17 s for a dead service).
 */
const BLOB_RETRY = { maxTries: 3, retryDelayInMs: 300, maxRetryDelayInMs: 900 };
/** Ranged requests a download may resume with after connection resets (within one idle timeout), as S3's. */
const RESUMES = 5;

export interface GhaServiceBounds {
  /** A download or upload that takes longer fails, whatever its size. */
  timeoutMs: number;
  /** A call or transfer that makes no progress this long fails as stalled. */
  idleMs: number;
  /** One call to the cache service that takes longer is retried (twice), then fails. */
  callMs: number;
}

/**
 * GitHub's cache service v2 as kcache speaks it: Twirp calls to look up, reserve and finalize a cache
 * entry, and its blob uploaded or downloaded through a signed Azure URL, every step bounded
 * (gha-transfer.ts). `key` is the cache key of an object's name; `version` kcache's one cache version.
 */
export class GhaCacheService {
  constructor(
    private readonly runner: GhaEnvironment,
    private readonly bounds: GhaServiceBounds,
    private readonly key: (name: string) => string,
    private readonly version: string,
  ) {}

  /** The whole transfer's bound: the idle timeout plus `bytes` at MIN_BYTES_PER_S, within timeoutMs. */
  private totalMs(bytes: number | undefined): number {
    const { timeoutMs, idleMs } = this.bounds;
    return bytes === undefined
      ? timeoutMs
      : Math.min(timeoutMs, idleMs + Math.ceil((bytes / MIN_BYTES_PER_S) * 1000));
  }

  async twirp<T>(method: string, body: Record<string, unknown>): Promise<T> {
    const { resultsUrl: base, runtimeToken: token } = this.runner;
    if (!base || !token)
      throw new StoreError(
        "GitHub cache: ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN are not set; the gha store works inside a GitHub Actions step (use a folder or s3:// store elsewhere)",
      );
    const url = `${base.replace(/\/?$/, "/")}${SERVICE}${method}`;
    const callMs = this.bounds.callMs;
    let last = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      if (attempt) await new Promise((r) => setTimeout(r, 300 * 3 ** (attempt - 1)));
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(callMs),
        });
      } catch (e) {
        // A call that never answers is a stalled service: waiting again would only double the wait.
        if ((e as Error).name === "TimeoutError")
          throw new StalledError(`GitHub cache: ${method} failed: no answer in ${callMs / 1000} s (timeout)`);
        last = (e as Error).message;
        continue;
      }
      const text = await res.text();
      if (res.ok) {
        try {
          return JSON.parse(text) as T;
        } catch {
          throw new StoreError(
            `GitHub cache: ${method} answered ${res.status} with something that is not JSON: ${text.slice(0, 200)}`,
          );
        }
      }
      last = `${res.status} ${text.slice(0, 200)}`;
      if (res.status < 500 && res.status !== 429) break;
    }
    throw new StoreError(`GitHub cache: ${method} failed: ${last}`);
  }

  /** GitHub's lookup: the key exactly, then the newest entry starting with each restore key. */
  async lookup(name: string, restoreKeys: string[]): Promise<{ url: string; matchedKey: string } | null> {
    const r = await this.twirp<{ ok?: boolean; signed_download_url?: string; matched_key?: string }>(
      "GetCacheEntryDownloadURL",
      { key: this.key(name), restore_keys: restoreKeys.map(this.key), version: this.version },
    );
    return r.ok && r.signed_download_url && r.matched_key
      ? { url: r.signed_download_url, matchedKey: r.matched_key }
      : null;
  }

  /** The signed URL of an object's blob, or null when the service has no such entry. */
  async downloadUrl(name: string): Promise<string | null> {
    const hit = await this.lookup(name, []);
    return hit?.matchedKey === this.key(name) ? hit.url : null;
  }

  /** Reserves, uploads and finalizes an entry: its size, or "exists" when the key is taken. */
  async upload(name: string, body: Readable | Buffer, expected?: number): Promise<number | "exists"> {
    const created = await this.twirp<{ ok?: boolean; signed_upload_url?: string; message?: string }>(
      "CreateCacheEntry",
      { key: this.key(name), version: this.version },
    );
    if (!created.ok || !created.signed_upload_url) return "exists";
    const size = await this.uploadBlob(name, created.signed_upload_url, body, expected);
    const done = await this.twirp<{ ok?: boolean; message?: string }>("FinalizeCacheEntryUpload", {
      key: this.key(name),
      version: this.version,
      size_bytes: String(size),
    });
    if (!done.ok)
      throw new StoreError(
        `GitHub cache: finalizing ${name} failed: ${done.message ?? "the service said no"}`,
      );
    return size;
  }

  private async uploadBlob(
    name: string,
    url: string,
    body: Readable | Buffer,
    expected?: number,
  ): Promise<number> {
    const { BlockBlobClient } = await import("@azure/storage-blob");
    const blob = new BlockBlobClient(url, undefined, { retryOptions: BLOB_RETRY });
    const bytes = Buffer.isBuffer(body) ? body.length : expected;
    const transfer = new Transfer(`GitHub cache: uploading ${name}`, this.bounds.idleMs, this.totalMs(bytes));
    try {
      if (Buffer.isBuffer(body)) {
        await transfer.run(blob.upload(body, body.length, transfer.options));
        return body.length;
      }
      let n = 0;
      const counted = body.on("data", (c: Buffer) => {
        n += c.length;
        // Bytes leaving kcache's side count as progress too: a block is reported only when sent whole.
        transfer.progressed();
      });
      await transfer.run(blob.uploadStream(counted, 8 << 20, 4, transfer.options));
      return n;
    } catch (e) {
      if (!Buffer.isBuffer(body)) body.destroy();
      throw transfer.failure(e);
    } finally {
      transfer.end();
    }
  }

  /**
   * An entry's bytes as a stream bounded by the idle timeout, or null when there is no such entry. A
   * connection that breaks mid-body is resumed with a ranged request from the last byte received, on
   * the same blob version (If-Match its ETag), as S3's are (resumable-download.ts): Azure's client's own
   * retry treats a reset as an abort and gives the whole pack up.
   */
  async download(name: string, bytes?: number, range?: [number, number]): Promise<Readable | null> {
    const url = await this.downloadUrl(name);
    if (!url) return null;
    const [start, count] = range ?? [0, undefined];
    const { BlobClient } = await import("@azure/storage-blob");
    const { idleMs } = this.bounds;
    const transfer = new Transfer(`GitHub cache: downloading ${name}`, idleMs, this.totalMs(bytes));
    const blob = new BlobClient(url, undefined, { retryOptions: BLOB_RETRY });
    const part = async (offset: number, etag?: string): Promise<DownloadPart> => {
      const r = await transfer.run(
        blob.download(start + offset, count === undefined ? undefined : count - offset, {
          ...transfer.options,
          // kcache resumes (above); the client's retrying stream would turn a reset into an abort.
          maxRetryRequests: 0,
          ...(offset > 0 && etag ? { conditions: { ifMatch: etag } } : {}),
        }),
      );
      const body = r.readableStreamBody;
      if (!body) throw new Error("no body");
      return { body: body as Readable, length: r.contentLength, etag: r.etag };
    };
    try {
      const what = `GitHub cache: reading ${name}`;
      const first = await part(0);
      if (count !== undefined && first.length !== count) {
        first.body.destroy();
        throw new StoreError(`${what}: asked for ${count} bytes at ${start}, given ${first.length}`);
      }
      const whole = resumable(first, { what, attempts: RESUMES, windowMs: idleMs, reopen: part });
      const guarded = withIdleTimeout(whole, idleMs, what, () => transfer.end());
      transfer.onAbort((e) => guarded.destroy(e));
      return guarded;
    } catch (e) {
      transfer.end();
      if ((e as { statusCode?: number }).statusCode === 404) return null;
      throw transfer.failure(e);
    }
  }
}
