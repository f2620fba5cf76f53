import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { StoreError } from "../errors.js";
import { withIdleTimeout } from "./idle-timeout.js";
import { MANIFESTS } from "./layout.js";
import { ObjectNotFound, type Store, type StoredObject } from "./store.js";

export interface GhaSettings {
  /** A download or upload that takes longer fails; a download that sends nothing for a minute does too. */
  timeoutMs: number;
  /** The runner's variables: ACTIONS_RESULTS_URL and ACTIONS_RUNTIME_TOKEN; GITHUB_TOKEN for ls and prune. */
  env: NodeJS.ProcessEnv;
  /** One call to the cache service that takes longer is retried (twice), then fails (default 30 s). */
  callTimeoutMs?: number;
}

/** A download or upload that takes longer fails (the job goes on without the cache). */
export const DEFAULT_GHA_TIMEOUT_MS = 10 * 60 * 1000;
const CALL_TIMEOUT_MS = 30_000;
const IDLE_MS = 60_000;

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
    let last = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      if (attempt) await new Promise((r) => setTimeout(r, 300 * 3 ** (attempt - 1)));
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(settings.callTimeoutMs ?? CALL_TIMEOUT_MS),
        });
      } catch (e) {
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

  const upload = async (name: string, body: Readable | Buffer): Promise<number | "exists"> => {
    const created = await twirp<{ ok?: boolean; signed_upload_url?: string; message?: string }>(
      "CreateCacheEntry",
      { key: key(name), version: KCACHE_GHA_VERSION },
    );
    if (!created.ok || !created.signed_upload_url) return "exists";
    const { BlockBlobClient } = await import("@azure/storage-blob");
    const blob = new BlockBlobClient(created.signed_upload_url);
    // Fails after the total timeout, or when the server takes no bytes for a minute (a stalled upload).
    const stop = new AbortController();
    const total = setTimeout(
      () => stop.abort(new Error(`no end after ${settings.timeoutMs} ms`)),
      settings.timeoutMs,
    );
    let idle: NodeJS.Timeout | undefined;
    const progressed = () => {
      clearTimeout(idle);
      idle = setTimeout(
        () => stop.abort(new Error(`the server took nothing for ${IDLE_MS / 1000} s`)),
        IDLE_MS,
      );
    };
    const options = { abortSignal: stop.signal, onProgress: progressed };
    let size: number;
    try {
      progressed();
      if (Buffer.isBuffer(body)) {
        await blob.upload(body, body.length, options);
        size = body.length;
      } else {
        let n = 0;
        const counted = body.on("data", (c: Buffer) => {
          n += c.length;
        });
        await blob.uploadStream(counted, 8 << 20, 4, options);
        size = n;
      }
    } catch (e) {
      const why = stop.signal.aborted ? String((stop.signal.reason as Error)?.message) : (e as Error).message;
      throw new StoreError(`GitHub cache: uploading ${name} failed: ${why}`, e);
    } finally {
      clearTimeout(total);
      clearTimeout(idle);
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

  const download = async (name: string): Promise<Readable | null> => {
    const url = await downloadUrl(name);
    if (!url) return null;
    const { BlobClient } = await import("@azure/storage-blob");
    try {
      // A broken connection resumes where it stopped (Azure's client does ranged retries).
      const r = await new BlobClient(url).download(0, undefined, {
        abortSignal: AbortSignal.timeout(settings.timeoutMs),
        maxRetryRequests: 5,
      });
      const body = r.readableStreamBody;
      if (!body) throw new Error("no body");
      return withIdleTimeout(
        Readable.from(body as AsyncIterable<Buffer>),
        IDLE_MS,
        `GitHub cache: reading ${name}`,
      );
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return null;
      throw new StoreError(`GitHub cache: downloading ${name} failed: ${(e as Error).message}`, e);
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

    put: async (name, body) => {
      const r = await upload(name, body);
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

    get: async (name) => {
      const s = await download(name);
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
