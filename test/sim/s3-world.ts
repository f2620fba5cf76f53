import fs from "node:fs";
import path from "node:path";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { CEPH_RGW_CREDENTIALS, startCephRgw } from "../helpers/ceph-rgw.js";
import { type Fault, faultProxy } from "../helpers/fault-proxy.js";
import type { S3Server } from "../helpers/s3rver.js";
import type { StoreSpec } from "./world.js";

/**
 * The simulation's S3 store: Ceph's RADOS Gateway (a real S3 server on 127.0.0.1 that honours
 * conditional writes as AWS S3 does; test/helpers/ceph-rgw.ts) behind the fault proxy that fails
 * requests as networks and servers do. Each world writes under a prefix of its own. The oracle
 * reads the store directly (not through either proxy), mirroring its objects into a folder laid out
 * as a local store's, so the same checks hold both.
 */
export type NetFault =
  /** The answer to the first manifest PUT is lost after the server stored it. */
  | "lose-manifest-answer"
  /** The first pack downloads are reset midway (resumed by ranged requests). */
  | "reset-pack-get"
  /** The first requests answer 500, then 429 with Retry-After. */
  | "server-errors"
  /** A pack download stalls midway (the idle timeout ends it). */
  | "stall-pack-get"
  /** Connections reset before any answer. */
  | "drop";

export interface S3Sim {
  spec(): StoreSpec;
  /** The fault the proxy injects from now on (null: none). */
  setFault(f: NetFault | null): void;
  /** Mirrors `prefix`'s objects into `dir` as a local store lays them out; returns their names. */
  mirror(prefix: string, dir: string): Promise<string[]>;
  /** Deletes or overwrites an object (a store fault). */
  damage(name: string, body: Buffer | null): Promise<void>;
  stop(): Promise<void>;
}

let worlds = 0;

export async function startS3Sim(): Promise<S3Sim> {
  const server: S3Server = await startCephRgw();
  let fault: NetFault | null = null;
  let count = 0;
  const choose = (req: { method?: string; url?: string; headers: Record<string, unknown> }): Fault => {
    if (process.env.KCACHE_SIM_DEBUG)
      process.stderr.write(`proxy: ${req.method} ${req.url} fault=${fault}\n`);
    if (!fault) return { kind: "pass" };
    const url = req.url ?? "";
    const pack = url.includes("/packs/") || url.includes("packs%2F");
    switch (fault) {
      case "lose-manifest-answer":
        if (req.method === "PUT" && /manifests/.test(url) && count++ === 0) return { kind: "lose-answer" };
        return { kind: "pass" };
      case "reset-pack-get":
        if (req.method === "GET" && pack && count++ < 2) return { kind: "reset", bytes: 300 };
        return { kind: "pass" };
      case "server-errors":
        if (count < 2) return { kind: "status", status: count++ === 0 ? 500 : 429, retryAfter: "1" };
        return { kind: "pass" };
      case "stall-pack-get":
        if (req.method === "GET" && pack && count++ === 0) return { kind: "stall", bytes: 200 };
        return { kind: "pass" };
      case "drop":
        return count++ < 2 ? { kind: "drop" } : { kind: "pass" };
    }
  };
  const proxy = await faultProxy(server.endpoint, (req) => choose(req));
  const client = new S3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: {
      accessKeyId: CEPH_RGW_CREDENTIALS.AWS_ACCESS_KEY_ID,
      secretAccessKey: CEPH_RGW_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
    },
  });
  const etags = new Map<string, string>();
  const sim: S3Sim = {
    spec: () => ({
      s3: sim,
      kind: "s3",
      endpoint: proxy.endpoint,
      bucket: server.bucket,
      prefix: `w${++worlds}-${Date.now()}/`,
    }),
    setFault(f) {
      fault = f;
      count = 0;
    },
    async mirror(prefix, dir) {
      const names: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix, ContinuationToken: token }),
        );
        for (const o of page.Contents ?? []) {
          const name = (o.Key as string).slice(prefix.length);
          names.push(name);
          const file = path.join(dir, ...name.split("/"));
          if (etags.get(o.Key as string) === o.ETag && fs.existsSync(file)) continue;
          const r = await client.send(new GetObjectCommand({ Bucket: server.bucket, Key: o.Key }));
          fs.mkdirSync(path.dirname(file), { recursive: true });
          fs.writeFileSync(
            file,
            Buffer.from(
              await (r.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
            ),
          );
          etags.set(o.Key as string, o.ETag as string);
        }
        token = page.NextContinuationToken;
      } while (token);
      // Objects gone from the store go from the mirror too.
      const have = new Set(names);
      const walk = (rel: string) => {
        for (const d of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
          const r = rel ? `${rel}/${d.name}` : d.name;
          if (d.isDirectory()) walk(r);
          else if (!have.has(r)) fs.rmSync(path.join(dir, r));
        }
      };
      if (fs.existsSync(dir)) walk("");
      return names;
    },
    async damage(name, body) {
      if (body === null) await client.send(new DeleteObjectCommand({ Bucket: server.bucket, Key: name }));
      else await client.send(new PutObjectCommand({ Bucket: server.bucket, Key: name, Body: body }));
    },
    async stop() {
      client.destroy();
      await proxy.close();
      await server.stop();
    },
  };
  return sim;
}
