import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { DEFAULT_S3, s3Store } from "../../../src/store/s3.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { conditionalProxy } from "../../helpers/conditional-proxy.js";
import { faultProxy } from "../../helpers/fault-proxy.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../../helpers/s3rver.js";
import { tempDir } from "../../helpers/sandbox.js";
import { storeContext } from "../../helpers/store-context.js";

/*
 * A manifest PUT that S3 stored but whose answer was lost (a reset: a flaky network, a proxy's
 * timeout) is retried by the SDK and answered 412 (If-None-Match: *) for the saver's own object.
 * "412" alone never proves another writer won (DESIGN.md): the save must take it for saved, and no
 * save may delete a pack that a stored manifest names. The server here is s3rver behind a proxy that
 * adds AWS S3's conditional writes (test/helpers/conditional-proxy.ts), with a fault proxy in front
 * that loses the answer to the first manifest PUT after the server acted on it.
 */
let server: S3Server;
let conditional: Awaited<ReturnType<typeof conditionalProxy>>;
beforeAll(async () => {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  server = await startS3rver();
  conditional = await conditionalProxy(server.endpoint);
});
afterAll(async () => {
  await conditional?.close();
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
    conditionalWrites: "always",
    retry: { attempts: 4, baseDelayMs: 50, maxDelayMs: 1000 },
  });
}

describe("a save whose manifest answer is lost after S3 stored it (If-None-Match honoured)", () => {
  it("is saved, keeps every pack, and a fresh restore at another path places every entry", async () => {
    let lost = 0;
    const proxy = await faultProxy(conditional.endpoint, (req) =>
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
      // The answer was really lost and the SDK's retry really met the saver's own manifest.
      expect(proxy.log.filter((l) => l.fault === "lose-answer")).toHaveLength(1);
      expect(conditional.refused()).toBeGreaterThanOrEqual(1);
      expect(saved.outcome).toBe("saved");

      const other = path.join(dir, "b");
      const ctxB = await storeContext(storeAt(conditional.endpoint, "lost/"), other, path.join(dir, "sb"), {
        revision: "a".repeat(40),
      });
      const r = await restore(ctxB);
      expect(r.matchedKey).toBe(ctx.key);
      expect(r.entriesRestored).toBe(6);
      expect(fs.readdirSync(other).length).toBeGreaterThanOrEqual(6);
    } finally {
      await proxy.close();
    }
  });
});
