import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { StoreError } from "../errors.js";
import { StalledError, withIdleTimeout } from "./idle-timeout.js";
import { MANIFESTS } from "./layout.js";
import { ObjectNotFound, type Store, type StoredObject } from "./store.js";

export interface GhaSettings {
  /** A download or upload that takes longer fails, whatever its size. */
  timeoutMs: number;
  /**
   * A call, download or upload that makes no progress this long fails as stalled (default 60 s,
   * store.idle-timeout); a transfer also fails past this plus its size at 1 MB/s.
   */
  idleTimeoutMs?: number;
  /** The runner's variables: ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN; GITHUB_TOKEN for ls and prune. */
  env: NodeJS.ProcessEnv;
  /** One call to the cache service that takes longer is retried (twice), then fails (default 30 s). */
  callTimeoutMs?: number;
}

/** A download or upload that takes longer fails (the job goes on without the cache). */
export const DEFAULT_GHA_TIMEOUT_MS = 10 * 60 * 1000;
const CALL_TIMEOUT_MS = 30_000;
export const DEFAULT_GHA_IDLE_MS = 60_000;
/** The slowest a transfer may go on average before it fails: 1 MB/s (a runner's link is 100x that). */
const MIN_BYTES_PER_S = 1_000_000;
/**
 * Azure's client retries an error status or a broken connection: twice, after 0.3 and 0.9 s (its
 * default waits 4 s, growing, four times: 16-17 s for a dead service).
 */
const BLOB_RETRY = { maxTries: 3, retryDelayInMs: 300, maxRetryDelayInMs: 900 };

/**
 * The cache version kcache gives every entry. GitHub finds an entry only by key *and* version;
 * actions/cache hashes its paths and the compression method the runner has into it, so a runner
 * without zstd misses what one with zstd saved. kcache's packs are compressed by kcache and uploaded
 * as they are: one version for every runner, whatever it has installed.
 */
export const KCACHE_GHA_VERSION = createHash("sha256").update("kcache-objects-v1").digest("hex");

const SERVICE = "twirp/github.actions.results.api.v1.CacheService/";

/**
 * GitHub's own cache service (v2: the Twirp CacheService and signed Azure Blob URLs), spoken
 * directly. Each pack and manifest is one cache entry under `kcache/<object name>`, uploaded and
 * downloaded as its bytes (no tar, no second compression, no staging folder). Lookups follow GitHub:
 * exact key, then the newest key with a prefix. Without a token for GitHub's REST API, `list` answers
 * with the newest match only and nothing can be deleted (GitHub evicts by itself: 7 days unused, 10 GB
 * per repository); with GITHUB_TOKEN and GITHUB_REPOSITORY, `ls` and `stats` (actions: read) and `prune` (actions: write) work
 * through the REST API's caches endpoints.
 */
export function ghaStore(settings: GhaSettings): Store {
  const { env } = settings;
  const idleMs = settings.idleTimeoutMs ?? DEFAULT_GHA_IDLE_MS;
  /** The whole transfer's bound: the idle timeout plus `bytes` at MIN_BYTES_PER_S, within timeoutMs. */
  const totalMs = (bytes: number | undefined) =>
    bytes === undefined
      ? settings.timeoutMs
      : Math.min(settings.timeoutMs, idleMs + Math.ceil((bytes / MIN_BYTES_PER_S) * 1000));
  const rest = restApi(env);
  const key = (name: string) => {
    const k = `kcache/${name}`;
    if (k.length > 512)
      throw new StoreError(`${name}: over GitHub's 512-character cache key limit; shorten key.prefix`);
    return k;
  };

  const twirp = async <T>(method: string, body: Record<string, unknown>): Promise<T> => {
    const base = env.ACTIONS_RESULTS_URL;
    const token = env.ACTIONS_RUNTIME_TOKEN;
    if (!base || !token)
      throw new StoreError(
        "GitHub cache: ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN are not set; the gha store works inside a GitHub Actions step (use a folder or s3:// store elsewhere)",
      );
    const url = `${base.replace(/\/?$/, "/")}${SERVICE}${method}`;
    const callMs = Math.min(settings.callTimeoutMs ?? CALL_TIMEOUT_MS, idleMs);
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
  };

  /** GitHub's lookup: the key exactly, then the newest entry starting with each restore key. */
  const lookup = async (
    name: string,
    restoreKeys: string[],
  ): Promise<{ url: string; matchedKey: string } | null> => {
    const r = await twirp<{ ok?: boolean; signed_download_url?: string; matched_key?: string }>(
      "GetCacheEntryDownloadURL",
      { key: key(name), restore_keys: restoreKeys.map(key), version: KCACHE_GHA_VERSION },
    );
    return r.ok && r.signed_download_url && r.matched_key
      ? { url: r.signed_download_url, matchedKey: r.matched_key }
      : null;
  };

  /** The signed URL of an object's blob, or null when the service has no such entry. */
  const downloadUrl = async (name: string): Promise<string | null> => {
    const hit = await lookup(name, []);
    return hit?.matchedKey === key(name) ? hit.url : null;
  };

  const upload = async (
    name: string,
    body: Readable | Buffer,
    expected?: number,
  ): Promise<number | "exists"> => {
    const created = await twirp<{ ok?: boolean; signed_upload_url?: string; message?: string }>(
      "CreateCacheEntry",
      { key: key(name), version: KCACHE_GHA_VERSION },
    );
    if (!created.ok || !created.signed_upload_url) return "exists";
    const { BlockBlobClient } = await import("@azure/storage-blob");
    const blob = new BlockBlobClient(created.signed_upload_url, undefined, { retryOptions: BLOB_RETRY });
    const bytes = Buffer.isBuffer(body) ? body.length : expected;
    const transfer = new Transfer(`GitHub cache: uploading ${name}`, idleMs, totalMs(bytes));
    let size: number;
    try {
      if (Buffer.isBuffer(body)) {
        await transfer.run(blob.upload(body, body.length, transfer.options));
        size = body.length;
      } else {
        let n = 0;
        const counted = body.on("data", (c: Buffer) => {
          n += c.length;
          // Bytes leaving kcache's side count as progress too: a block is reported only when sent whole.
          transfer.progressed();
        });
        await transfer.run(blob.uploadStream(counted, 8 << 20, 4, transfer.options));
        size = n;
      }
    } catch (e) {
      if (!Buffer.isBuffer(body)) body.destroy();
      throw transfer.failure(e);
    } finally {
      transfer.end();
    }
    const done = await twirp<{ ok?: boolean; message?: string }>("FinalizeCacheEntryUpload", {
      key: key(name),
      version: KCACHE_GHA_VERSION,
      size_bytes: String(size),
    });
    if (!done.ok)
      throw new StoreError(
        `GitHub cache: finalizing ${name} failed: ${done.message ?? "the service said no"}`,
      );
    return size;
  };

  const download = async (name: string, bytes?: number): Promise<Readable | null> => {
    const url = await downloadUrl(name);
    if (!url) return null;
    const { BlobClient } = await import("@azure/storage-blob");
    const transfer = new Transfer(`GitHub cache: downloading ${name}`, idleMs, totalMs(bytes));
    try {
      // A broken connection resumes where it stopped (ranged retries), within the transfer's bounds.
      const r = await transfer.run(
        new BlobClient(url, undefined, { retryOptions: BLOB_RETRY }).download(0, undefined, {
          ...transfer.options,
          maxRetryRequests: 2,
        }),
      );
      const body = r.readableStreamBody;
      if (!body) throw new Error("no body");
      const guarded = withIdleTimeout(
        Readable.from(body as AsyncIterable<Buffer>),
        idleMs,
        `GitHub cache: reading ${name}`,
        () => transfer.end(),
      );
      transfer.onAbort((e) => guarded.destroy(e));
      return guarded;
    } catch (e) {
      transfer.end();
      if ((e as { statusCode?: number }).statusCode === 404) return null;
      throw transfer.failure(e);
    }
  };

  return {
    description: "GitHub Actions cache",
    capabilities: { listAll: rest !== null, delete: rest !== null, evicts: true },
    ...(rest
      ? {}
      : {
          capabilityHint:
            "give it a token for GitHub's REST API: GITHUB_TOKEN (or KCACHE_GITHUB_TOKEN) with permissions actions: read (ls, stats) or actions: write (prune), and GITHUB_REPOSITORY",
        }),

    put: async (name, body, expected) => {
      const r = await upload(name, body, expected);
      if (r === "exists") throw new StoreError(`GitHub cache: ${name} already exists`);
      return { size: r };
    },

    createIfAbsent: async (name, body) => {
      if ((await upload(name, body)) !== "exists") return true;
      // Reserved by another writer, which may still be uploading it: it is absent until finalized.
      const until = Date.now() + 15_000;
      while (Date.now() < until) {
        if (await downloadUrl(name)) return false;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new StoreError(
        `GitHub cache: ${name} is reserved by another run that has not finished writing it (if that run died, the reservation lapses)`,
      );
    },

    get: async (name, expected) => {
      const s = await download(name, expected);
      if (!s) throw new ObjectNotFound(name);
      return s;
    },

    read: async (name) => {
      const s = await download(name);
      if (!s) return null;
      const chunks: Buffer[] = [];
      for await (const c of s) chunks.push(c as Buffer);
      return Buffer.concat(chunks);
    },

    exists: async (name) => (await downloadUrl(name)) !== null,

    list: async (prefix): Promise<StoredObject[]> => {
      if (rest) return rest.list(key(prefix));
      if (!prefix.startsWith(`${MANIFESTS}/`)) {
        throw new StoreError(
          "GitHub's cache service cannot list packs without a token: set GITHUB_TOKEN and GITHUB_REPOSITORY (permissions: actions: read for ls and stats, actions: write for prune)",
        );
      }
      const hit = await lookup(prefix, [prefix]);
      return hit ? [{ name: hit.matchedKey.slice("kcache/".length), size: 0, modified: new Date() }] : [];
    },

    // Without a REST token there is no delete for a job: entries age out after 7 days unused.
    delete: async (name) => {
      if (rest) await rest.delete(key(name));
    },
  };
}

/** GitHub's REST API for a repository's caches (list, delete), when a token is given. */
function restApi(env: NodeJS.ProcessEnv) {
  const token = env.KCACHE_GITHUB_TOKEN || env.GITHUB_TOKEN;
  const repo = env.GITHUB_REPOSITORY;
  if (!token || !repo) return null;
  const api = (env.GITHUB_API_URL || "https://api.github.com").replace(/\/$/, "");
  const call = async (method: string, path: string): Promise<Response> => {
    let res: Response;
    try {
      res = await fetch(`${api}/repos/${repo}/actions/caches${path}`, {
        method,
        headers: {
          Accept: "application/vnd.github+json",
          Authorization: `Bearer ${token}`,
          "X-GitHub-Api-Version": "2022-11-28",
        },
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
    } catch (e) {
      throw new StoreError(`GitHub REST API: ${method} caches failed: ${(e as Error).message}`, e);
    }
    if (!res.ok && res.status !== 404)
      throw new StoreError(
        `GitHub REST API: ${method} ${repo} caches answered ${res.status}${res.status === 403 ? ` (the token needs permissions: actions: ${method === "GET" ? "read" : "write"})` : ""}: ${(await res.text()).slice(0, 200)}`,
      );
    return res;
  };
  return {
    async list(prefix: string): Promise<StoredObject[]> {
      const out: StoredObject[] = [];
      for (let page = 1; page < 1000; page++) {
        const res = await call(
          "GET",
          `?key=${encodeURIComponent(prefix)}&per_page=100&page=${page}&sort=created_at&direction=desc`,
        );
        const body = (await res.json()) as {
          actions_caches?: { key: string; size_in_bytes: number; created_at: string }[];
        };
        const got = body.actions_caches ?? [];
        for (const c of got)
          if (c.key.startsWith(prefix))
            out.push({
              name: c.key.slice("kcache/".length),
              size: c.size_in_bytes,
              modified: new Date(c.created_at),
            });
        if (got.length < 100) break;
      }
      return out.sort((a, b) => b.modified.getTime() - a.modified.getTime());
    },
    async delete(k: string): Promise<void> {
      await call("DELETE", `?key=${encodeURIComponent(k)}`);
    },
  };
}

/**
 * The bounds of one blob transfer: it fails as stalled after `idleMs` without progress (no answer,
 * no bytes sent or received), and as too slow past `totalMs`; either aborts the HTTP request, so
 * nothing outlives the command.
 */
class Transfer {
  private readonly stop = new AbortController();
  private idle: NodeJS.Timeout | undefined;
  private readonly total: NodeJS.Timeout;
  private ended = false;
  readonly options: { abortSignal: AbortSignal; onProgress: () => void };

  constructor(
    private readonly what: string,
    private readonly idleMs: number,
    totalMs: number,
  ) {
    this.options = { abortSignal: this.stop.signal, onProgress: () => this.progressed() };
    this.total = setTimeout(
      () =>
        this.abort(
          new StoreError(`${what} failed: not done after ${Math.round(totalMs / 1000)} s (too slow)`),
        ),
      totalMs,
    );
    this.progressed();
  }

  progressed(): void {
    if (this.ended) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(
      () =>
        this.abort(
          new StalledError(`${this.what} failed: nothing moved for ${this.idleMs / 1000} s (stalled)`),
        ),
      this.idleMs,
    );
  }

  /** Resolves as `p` does, or rejects as soon as the transfer is aborted. */
  run<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.onAbort(reject);
      p.then(resolve, reject);
    });
  }

  onAbort(f: (e: Error) => void): void {
    if (this.stop.signal.aborted) f(this.stop.signal.reason as Error);
    else
      this.stop.signal.addEventListener("abort", () => f(this.stop.signal.reason as Error), { once: true });
  }

  /** The error to report: the transfer's own bound when it fired, else the client's. */
  failure(e: unknown): StoreError {
    if (this.stop.signal.aborted) return this.stop.signal.reason as StoreError;
    return new StoreError(`${this.what} failed: ${(e as Error).message}`, e);
  }

  end(): void {
    this.ended = true;
    clearTimeout(this.idle);
    clearTimeout(this.total);
  }

  private abort(e: StoreError): void {
    if (this.ended) return;
    this.end();
    this.stop.abort(e);
  }
}
