import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import {
  BlobSASPermissions,
  BlobServiceClient,
  generateBlobSASQueryParameters,
  StorageSharedKeyCredential,
} from "@azure/storage-blob";
import { packageFile } from "./package-file.js";

/** Azurite's well-known development account (public, documented by Microsoft). */
const ACCOUNT = "devstoreaccount1";
const ACCOUNT_KEY =
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const CONTAINER = "actions-cache";
const SERVICE = "/twirp/github.actions.results.api.v1.CacheService/";

interface Entry {
  id: number;
  key: string;
  version: string;
  /** The ref whose run saved it (from the runtime token's claims, as GitHub scopes caches). */
  scope: string;
  blob: string;
  finalized: boolean;
  createdAt: number;
  lastAccess: number;
  size: number;
}

export interface GhaServerOptions {
  /** Evict least recently used entries while the repository holds more than this (GitHub: 10 GB). */
  capBytes?: number;
}

export interface GhaCacheServer {
  /** What a runner sets for the cache service v2 client to use this server. */
  env: Record<string, string>;
  entries: Map<string, Entry>;
  /** Twirp calls seen, by method. */
  calls: string[];
  /** Makes the next `n` Twirp calls answer with this HTTP status. */
  failNext(n: number, status: number): void;
  /**
   * A runtime token for a run of `ref` (it writes that ref's scope) that may also read `readRefs`,
   * as GitHub's token claims say: a pull request reads its base branch, the default branch only its own.
   */
  tokenFor(ref: string, readRefs?: string[]): string;
  /** Where the blob server (Azurite) listens: http://127.0.0.1:<port>. */
  blobOrigin: string;
  /**
   * Hands out signed blob URLs on `origin` (a fault proxy in front of blobOrigin) instead of the blob
   * server itself; null goes back to direct URLs.
   */
  routeBlobs(origin: string | null): void;
  /** The cache key whose blob a signed URL (or its path) names, if any. */
  keyOfBlobUrl(url: string): string | undefined;
  /** Evicts every entry whose key ends with `suffix`, as GitHub does with entries unused for 7 days. */
  evict(suffix: string): number;
  /** Overwrites the stored bytes of every entry whose key ends with `suffix` (as disk corruption would). */
  tamper(suffix: string, data: Buffer): Promise<void>;
  stop(): Promise<void>;
}

/**
 * GitHub's cache service v2, locally: the Twirp CacheService (CreateCacheEntry,
 * FinalizeCacheEntryUpload, GetCacheEntryDownloadURL) in this process, handing out SAS URLs of a real
 * Azurite blob server process, so @azure/storage-blob runs its real code paths.
 * Lookup follows GitHub: the key and version exactly, then each restore key exactly, then the newest
 * entry whose key starts with it; an entry is reserved by its first creator and visible once finalized.
 */
export async function startGhaCacheServer(opts: GhaServerOptions = {}): Promise<GhaCacheServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "azurite-"));
  const blobPort = await freePort();
  const bin = packageFile("azurite", "dist/src/blob/main.js");
  const azurite: ChildProcess = spawn(
    process.execPath,
    [
      bin,
      "--blobHost",
      "127.0.0.1",
      "--blobPort",
      String(blobPort),
      "--location",
      dir,
      "--silent",
      "--skipApiVersionCheck",
      "--loose",
      "--disableTelemetry",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  await new Promise<void>((resolve, reject) => {
    let out = "";
    const onData = (d: Buffer) => {
      out += d.toString();
      if (/successfully listens on|listening at/i.test(out)) resolve();
    };
    azurite.stdout?.on("data", onData);
    azurite.stderr?.on("data", onData);
    azurite.on("exit", (code) => reject(new Error(`azurite exited ${code}: ${out}`)));
    // Minutes on a loaded machine (Azurite loads a few thousand modules): the limit ends a hang only.
    setTimeout(() => reject(new Error(`azurite did not start: ${out}`)), 180_000);
  });
  const blobOrigin = `http://127.0.0.1:${blobPort}`;
  const blobEndpoint = `${blobOrigin}/${ACCOUNT}`;
  let blobRoute: string | null = null;
  const credential = new StorageSharedKeyCredential(ACCOUNT, ACCOUNT_KEY);
  const service = new BlobServiceClient(blobEndpoint, credential);
  await service.getContainerClient(CONTAINER).createIfNotExists();

  const sasUrl = (blob: string, permissions: string) => {
    const sas = generateBlobSASQueryParameters(
      {
        containerName: CONTAINER,
        blobName: blob,
        permissions: BlobSASPermissions.parse(permissions),
        expiresOn: new Date(Date.now() + 3600_000),
      },
      credential,
    ).toString();
    return `${blobRoute ?? blobOrigin}/${ACCOUNT}/${CONTAINER}/${encodeURIComponent(blob)}?${sas}`;
  };

  const entries = new Map<string, Entry>();
  const calls: string[] = [];
  let failures: { n: number; status: number } = { n: 0, status: 500 };
  let blobs = 0;
  const id = (scope: string, key: string, version: string) => `${scope}\0${version}\0${key}`;
  /** GitHub's lookup: in each readable scope in turn (own first), the key exactly, then each restore key exactly or as the newest prefix. */
  const lookup = (
    key: string,
    restoreKeys: string[],
    version: string,
    scopes: string[],
  ): Entry | undefined => {
    for (const scope of scopes) {
      const done = [...entries.values()].filter(
        (e) => e.finalized && e.version === version && e.scope === scope,
      );
      const exact = (k: string) => done.find((e) => e.key === k);
      const newestWithPrefix = (p: string) =>
        done.filter((e) => e.key.startsWith(p)).sort((a, b) => b.createdAt - a.createdAt)[0];
      const hit = exact(key) ?? restoreKeys.map((k) => exact(k) ?? newestWithPrefix(k)).find(Boolean);
      if (hit) return hit;
    }
    return undefined;
  };
  const container = service.getContainerClient(CONTAINER);
  const remove = (e: Entry) => {
    entries.delete(id(e.scope, e.key, e.version));
    void container.getBlockBlobClient(e.blob).deleteIfExists();
  };
  /** Least recently used first, until the repository is under its cap (GitHub: 10 GB). */
  const enforceCap = () => {
    if (!opts.capBytes) return;
    const total = () => [...entries.values()].reduce((n, e) => n + (e.finalized ? e.size : 0), 0);
    const lru = [...entries.values()].filter((e) => e.finalized).sort((a, b) => a.lastAccess - b.lastAccess);
    while (total() > opts.capBytes && lru.length) remove(lru.shift() as Entry);
  };
  /** The scopes a runtime token may write and read, from its claims (GitHub's "ac" claim). */
  const claims = (auth: string): { write: string | null; read: string[] } => {
    const token = auth.slice("Bearer ".length);
    try {
      const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString()) as {
        ac?: string;
      };
      const ac = JSON.parse(payload.ac ?? "[]") as { Scope: string; Permission: number }[];
      return {
        write: ac.find((a) => a.Permission & 2)?.Scope ?? null,
        read: ac.filter((a) => a.Permission & 1).map((a) => a.Scope),
      };
    } catch {
      // Not a JWT: a runner of the default branch.
      return { write: "refs/heads/main", read: ["refs/heads/main"] };
    }
  };
  let clock = 0;
  const tick = () => Date.now() + ++clock / 1000;

  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://x");
      const reply = (status: number, value: unknown) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (!req.headers.authorization?.startsWith("Bearer "))
        return reply(401, { code: "unauthenticated", msg: "no token" });
      // GitHub's REST API for a repository's caches: list (by key prefix) and delete (by key).
      const restPath = /^\/repos\/[^/]+\/[^/]+\/actions\/caches$/.exec(url.pathname);
      if (restPath) {
        calls.push(`REST ${req.method}`);
        const prefix = url.searchParams.get("key") ?? "";
        const matching = [...entries.values()].filter((e) => e.finalized && e.key.startsWith(prefix));
        if (req.method === "GET") {
          const page = Number(url.searchParams.get("page") ?? 1);
          const per = Number(url.searchParams.get("per_page") ?? 30);
          const sorted = matching.sort((a, b) => b.createdAt - a.createdAt);
          return reply(200, {
            total_count: sorted.length,
            actions_caches: sorted.slice((page - 1) * per, page * per).map((e) => ({
              id: e.id,
              ref: e.scope,
              key: e.key,
              version: e.version,
              last_accessed_at: new Date(e.lastAccess).toISOString(),
              created_at: new Date(e.createdAt).toISOString(),
              size_in_bytes: e.size,
            })),
          });
        }
        if (req.method === "DELETE") {
          const exact = matching.filter((e) => e.key === prefix);
          if (!exact.length) return reply(404, { message: "Not Found" });
          for (const e of exact) remove(e);
          return reply(200, { total_count: exact.length, actions_caches: [] });
        }
        return reply(405, { message: "method not allowed" });
      }
      const method = req.url?.startsWith(SERVICE) ? req.url.slice(SERVICE.length) : "";
      calls.push(method);
      if (failures.n > 0) {
        failures.n--;
        return reply(failures.status, { code: "internal", msg: "injected failure" });
      }
      const scopes = claims(req.headers.authorization);
      const msg = JSON.parse(body || "{}") as Record<string, unknown>;
      const key = String(msg.key ?? "");
      const version = String(msg.version ?? "");
      switch (method) {
        case "CreateCacheEntry": {
          if (!scopes.write) return reply(403, { code: "permission_denied", msg: "token cannot write" });
          if (entries.has(id(scopes.write, key, version)))
            return reply(200, { ok: false, message: "cache entry already exists" });
          const blob = `entry-${++blobs}`;
          const now = tick();
          entries.set(id(scopes.write, key, version), {
            id: blobs,
            key,
            version,
            scope: scopes.write,
            blob,
            finalized: false,
            createdAt: now,
            lastAccess: now,
            size: 0,
          });
          return reply(200, { ok: true, signed_upload_url: sasUrl(blob, "cw") });
        }
        case "FinalizeCacheEntryUpload": {
          const e = scopes.write ? entries.get(id(scopes.write, key, version)) : undefined;
          if (!e || e.finalized) return reply(200, { ok: false, message: "no such reservation" });
          e.finalized = true;
          e.size = Number(msg.size_bytes ?? msg.sizeBytes ?? 0);
          enforceCap();
          return reply(200, { ok: true, entry_id: String(e.id) });
        }
        case "GetCacheEntryDownloadURL": {
          const restoreKeys = (msg.restore_keys ?? msg.restoreKeys ?? []) as string[];
          const own = scopes.write ? [scopes.write] : [];
          const e = lookup(key, restoreKeys, version, [...new Set([...own, ...scopes.read])]);
          if (!e) return reply(200, { ok: false });
          e.lastAccess = tick();
          return reply(200, { ok: true, signed_download_url: sasUrl(e.blob, "r"), matched_key: e.key });
        }
        default:
          return reply(404, { code: "bad_route", msg: `no method ${method}` });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    env: {
      ACTIONS_CACHE_SERVICE_V2: "true",
      ACTIONS_RESULTS_URL: `http://127.0.0.1:${port}/`,
      ACTIONS_RUNTIME_TOKEN: "test-token",
    },
    entries,
    calls,
    blobOrigin,
    routeBlobs(origin) {
      blobRoute = origin;
    },
    keyOfBlobUrl(url) {
      const blob = decodeURIComponent(url.split("?")[0]?.split("/").at(-1) ?? "");
      for (const e of entries.values()) if (e.blob === blob) return e.key;
      return undefined;
    },
    failNext(n, status) {
      failures = { n, status };
    },
    tokenFor(ref, readRefs = []) {
      const ac = JSON.stringify([
        { Scope: ref, Permission: 3 },
        ...readRefs.map((r) => ({ Scope: r, Permission: 1 })),
      ]);
      const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
      return `${part({ alg: "none", typ: "JWT" })}.${part({ ac })}.`;
    },
    evict(suffix) {
      const gone = [...entries.values()].filter((e) => e.key.endsWith(suffix));
      for (const e of gone) remove(e);
      return gone.length;
    },
    async tamper(suffix, data) {
      for (const e of entries.values()) {
        if (e.key.endsWith(suffix))
          await service.getContainerClient(CONTAINER).getBlockBlobClient(e.blob).upload(data, data.length);
      }
    },
    stop: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => {
        azurite.once("exit", () => resolve());
        azurite.kill();
      });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
