import { createHash } from "node:crypto";
import { buffer } from "node:stream/consumers";
import { ghaEnvironment } from "../environment.js";
import { StoreError } from "../errors.js";
import { restApi } from "./gha-rest.js";
import { GhaCacheService } from "./gha-service.js";
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

/**
 * The cache version kcache gives every entry. GitHub finds an entry only by key *and* version;
 * actions/cache hashes its paths and the compression method the runner has into it, so a runner
 * without zstd misses what one with zstd saved. kcache's packs are compressed by kcache and uploaded
 * as they are: one version for every runner, whatever it has installed.
 */
export const KCACHE_GHA_VERSION = createHash("sha256").update("kcache-objects-v1").digest("hex");

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
  const runner = ghaEnvironment(settings.env);
  const idleMs = settings.idleTimeoutMs ?? DEFAULT_GHA_IDLE_MS;
  const rest = restApi(runner, CALL_TIMEOUT_MS);
  const key = (name: string) => {
    const k = `kcache/${name}`;
    if (k.length > 512)
      throw new StoreError(`${name}: over GitHub's 512-character cache key limit; shorten key.prefix`);
    return k;
  };
  const service = new GhaCacheService(
    runner,
    {
      timeoutMs: settings.timeoutMs,
      idleMs,
      callMs: Math.min(settings.callTimeoutMs ?? CALL_TIMEOUT_MS, idleMs),
    },
    key,
    KCACHE_GHA_VERSION,
  );
  return {
    description: "GitHub Actions cache",
    capabilities: { listAll: rest !== null, delete: rest !== null, evicts: true, atomicCreate: true },
    ...(rest
      ? {}
      : {
          capabilityHint:
            "give it a token for GitHub's REST API: GITHUB_TOKEN (or KCACHE_GITHUB_TOKEN) with permissions actions: read (ls, stats) or actions: write (prune), and GITHUB_REPOSITORY",
        }),

    put: async (name, body, expected) => {
      const r = await service.upload(name, body, expected);
      if (r === "exists") throw new StoreError(`GitHub cache: ${name} already exists`);
      return { size: r };
    },
    createIfAbsent: (name, body) => createIfAbsent(service, name, body),
    get: async (name, expected) => {
      const s = await service.download(name, expected);
      if (!s) throw new ObjectNotFound(name);
      return s;
    },
    getRange: async (name, offset, length) => {
      const s = await service.download(name, length, [offset, length]);
      if (!s) throw new ObjectNotFound(name);
      return s;
    },
    read: async (name) => {
      const s = await service.download(name);
      return s ? buffer(s) : null;
    },
    exists: async (name) => (await service.downloadUrl(name)) !== null,
    list: (prefix) => (rest ? rest.list(key(prefix)) : newestManifest(service, prefix)),

    // Without a REST token there is no delete for a job: entries age out after 7 days unused.
    delete: async (name) => {
      if (rest) await rest.delete(key(name));
    },
  };
}

/** Creates an entry unless its key exists; one reserved by a writer still uploading it is waited for (15 s). */
async function createIfAbsent(service: GhaCacheService, name: string, body: Buffer): Promise<boolean> {
  if ((await service.upload(name, body)) !== "exists") return true;
  // Reserved by another writer, which may still be uploading it: it is absent until finalized.
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    if (await service.downloadUrl(name)) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new StoreError(
    `GitHub cache: ${name} is reserved by another run that has not finished writing it (if that run died, the reservation lapses)`,
  );
}

/** Without a REST token, a listing is the service's own lookup: the newest manifest under the prefix. */
async function newestManifest(service: GhaCacheService, prefix: string): Promise<StoredObject[]> {
  if (!prefix.startsWith(`${MANIFESTS}/`)) {
    throw new StoreError(
      "GitHub's cache service cannot list packs without a token: set GITHUB_TOKEN and GITHUB_REPOSITORY (permissions: actions: read for ls and stats, actions: write for prune)",
    );
  }
  const hit = await service.lookup(prefix, [prefix]);
  return hit ? [{ name: hit.matchedKey.slice("kcache/".length), size: 0, modified: new Date() }] : [];
}
