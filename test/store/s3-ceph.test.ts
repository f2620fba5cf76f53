import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { DEFAULT_S3, s3Store } from "../../src/store/s3.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { CEPH_RGW_CREDENTIALS, startCephRgw } from "../helpers/ceph-rgw.js";
import { faultProxy } from "../helpers/fault-proxy.js";
import type { S3Server } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";
import { storeContext } from "../helpers/store-context.js";
import { type Backend, storeConformance } from "./conformance.js";

/*
 * The S3 store against Ceph's RADOS Gateway (Debian's radosgw, a real S3 server, started by
 * scripts/ceph-rgw.sh on 127.0.0.1 with a memory-backed OSD): it honours `If-None-Match: *` on PUT
 * as AWS S3 and MinIO do, which s3rver does not, so kcache's conditional write runs against a server
 * that keeps the promise rather than against a proxy that adds it.
 */
let server: S3Server;
let n = 0;
beforeAll(async () => {
  Object.assign(process.env, CEPH_RGW_CREDENTIALS);
  server = await startCephRgw();
});
afterAll(async () => {
  await server?.stop();
});

function storeAt(endpoint: string, prefix: string) {
  return s3Store({
    ...DEFAULT_S3,
    bucket: server.bucket,
    prefix,
    region: "us-east-1",
    endpoint,
    forcePathStyle: true,
    idleTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    retry: { attempts: 4, baseDelayMs: 50, maxDelayMs: 1000 },
  });
}

describe("S3 store conformance against Ceph's RADOS Gateway (honours If-None-Match on PUT)", () => {
  // conditional-writes: auto, so the probe must find that this server honours the header.
  storeConformance(
    (): Backend => ({ store: storeAt(server.endpoint, `ceph-${++n}/`), fullListing: true, listTickMs: 1100 }),
    { atomicCreate: true, canDelete: true },
  );
});

describe("a save whose manifest answer is lost after Ceph stored it", () => {
  it("is saved, keeps every pack, and a fresh restore at another path places every entry", async () => {
    let lost = 0;
    const proxy = await faultProxy(server.endpoint, (req) =>
      req.method === "PUT" && /\/manifests\//.test(req.url ?? "") && lost++ === 0
        ? { kind: "lose-answer" }
        : { kind: "pass" },
    );
    try {
      const dir = tempDir();
      const cache = path.join(dir, "a");
      generateTritonCache(cache, { entries: 6, totalBytes: 120_000 });
      const ctx = await storeContext(storeAt(proxy.endpoint, "lost/"), cache, path.join(dir, "sa"), {
        revision: "a".repeat(40),
      });
      const saved = await save(ctx);
      // The answer was really lost, and the SDK's retry met the saver's own manifest (412).
      expect(proxy.log.filter((l) => l.fault === "lose-answer")).toHaveLength(1);
      expect(
        proxy.log.filter((l) => l.method === "PUT" && l.url.includes("/manifests/")).length,
      ).toBeGreaterThan(1);
      expect(saved.outcome).toBe("saved");
      const other = path.join(dir, "b");
      const ctxB = await storeContext(storeAt(server.endpoint, "lost/"), other, path.join(dir, "sb"), {
        revision: "a".repeat(40),
      });
      const r = await restore(ctxB);
      expect(r.matchedKey).toBe(ctx.key);
      expect(r.entriesRestored).toBe(6);
    } finally {
      await proxy.close();
    }
  });
});
