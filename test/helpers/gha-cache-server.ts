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
  key: string;
  version: string;
  blob: string;
  finalized: boolean;
  createdAt: number;
}

export interface GhaCacheServer {
  /** What a runner sets for @actions/cache to use this server (cache service v2). */
  env: Record<string, string>;
  entries: Map<string, Entry>;
  /** Twirp calls seen, by method. */
  calls: string[];
  /** Makes the next `n` Twirp calls answer with this HTTP status. */
  failNext(n: number, status: number): void;
  /** Overwrites the stored bytes of every entry whose key ends with `suffix` (as disk corruption would). */
  tamper(suffix: string, data: Buffer): Promise<void>;
  stop(): Promise<void>;
}

/**
 * GitHub's cache service v2, locally: the Twirp CacheService (CreateCacheEntry,
 * FinalizeCacheEntryUpload, GetCacheEntryDownloadURL) in this process, handing out SAS URLs of a real
 * Azurite blob server process, so @actions/cache and @azure/storage-blob run their real code paths.
 * Lookup follows GitHub: the key and version exactly, then each restore key exactly, then the newest
 * entry whose key starts with it; an entry is reserved by its first creator and visible once finalized.
 */
export async function startGhaCacheServer(): Promise<GhaCacheServer> {
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
    setTimeout(() => reject(new Error(`azurite did not start: ${out}`)), 20_000);
  });
  const blobEndpoint = `http://127.0.0.1:${blobPort}/${ACCOUNT}`;
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
    return `${blobEndpoint}/${CONTAINER}/${encodeURIComponent(blob)}?${sas}`;
  };

  const entries = new Map<string, Entry>();
  const calls: string[] = [];
  let failures: { n: number; status: number } = { n: 0, status: 500 };
  let blobs = 0;
  const id = (key: string, version: string) => `${version}\0${key}`;
  const lookup = (key: string, restoreKeys: string[], version: string): Entry | undefined => {
    const done = [...entries.values()].filter((e) => e.finalized && e.version === version);
    const exact = (k: string) => done.find((e) => e.key === k);
    const newestWithPrefix = (p: string) =>
      done.filter((e) => e.key.startsWith(p)).sort((a, b) => b.createdAt - a.createdAt)[0];
    return exact(key) ?? restoreKeys.map((k) => exact(k) ?? newestWithPrefix(k)).find(Boolean);
  };

  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      const method = req.url?.startsWith(SERVICE) ? req.url.slice(SERVICE.length) : "";
      calls.push(method);
      const reply = (status: number, value: unknown) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (!req.headers.authorization?.startsWith("Bearer "))
        return reply(401, { code: "unauthenticated", msg: "no token" });
      if (failures.n > 0) {
        failures.n--;
        return reply(failures.status, { code: "internal", msg: "injected failure" });
      }
      const msg = JSON.parse(body || "{}") as Record<string, unknown>;
      const key = String(msg.key ?? "");
      const version = String(msg.version ?? "");
      switch (method) {
        case "CreateCacheEntry": {
          if (entries.has(id(key, version)))
            return reply(200, { ok: false, message: "cache entry already exists" });
          const blob = `entry-${++blobs}`;
          entries.set(id(key, version), {
            key,
            version,
            blob,
            finalized: false,
            createdAt: Date.now() + blobs / 1000,
          });
          return reply(200, { ok: true, signed_upload_url: sasUrl(blob, "cw") });
        }
        case "FinalizeCacheEntryUpload": {
          const e = entries.get(id(key, version));
          if (!e || e.finalized) return reply(200, { ok: false, message: "no such reservation" });
          e.finalized = true;
          return reply(200, { ok: true, entry_id: String(blobs) });
        }
        case "GetCacheEntryDownloadURL": {
          const restoreKeys = (msg.restore_keys ?? msg.restoreKeys ?? []) as string[];
          const e = lookup(key, restoreKeys, version);
          if (!e) return reply(200, { ok: false });
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
    failNext(n, status) {
      failures = { n, status };
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
