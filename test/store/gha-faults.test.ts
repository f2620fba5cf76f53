import { buffer } from "node:stream/consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ghaStore } from "../../src/store/gha.js";
import { type Fault, faultProxy } from "../helpers/fault-proxy.js";
import { type GhaCacheServer, startGhaCacheServer } from "../helpers/gha-cache-server.js";

/** The cache service (v2 protocol on Azurite) behind a proxy that fails calls on purpose. */
let server: GhaCacheServer;
beforeAll(async () => {
  server = await startGhaCacheServer();
});
afterAll(async () => {
  await server?.stop();
});

async function storeBehind(choose: (n: number) => Fault) {
  const proxy = await faultProxy(server.env.ACTIONS_RESULTS_URL as string, (_req, n) => choose(n));
  const store = ghaStore({
    timeoutMs: 10_000,
    callTimeoutMs: 400,
    env: { ...server.env, ACTIONS_RESULTS_URL: `${proxy.endpoint}/` },
  });
  return { store, proxy };
}

describe("the gha store when GitHub's cache service misbehaves", () => {
  it("says what the service answered: garbage, an error status, a call that never answers", async () => {
    for (const [fault, message] of [
      [{ kind: "garbage" }, /GetCacheEntryDownloadURL answered 200 with something that is not JSON/],
      [{ kind: "status", status: 500 }, /GetCacheEntryDownloadURL failed: 500/],
      [{ kind: "status", status: 401 }, /GetCacheEntryDownloadURL failed: 401/],
      [{ kind: "hang" }, /GetCacheEntryDownloadURL failed: .*(timeout|aborted)/i],
    ] as [Fault, RegExp][]) {
      const { store, proxy } = await storeBehind(() => fault);
      try {
        const t0 = Date.now();
        await expect(store.read("manifests/x")).rejects.toThrow(message);
        // Retries are bounded: well inside the store's own 10 s timeout, even on a loaded machine.
        expect(Date.now() - t0).toBeLessThan(10_000);
      } finally {
        await proxy.close();
      }
    }
  });

  it("resumes a blob download the connection reset, from the last byte received, on the same blob", async () => {
    const store = ghaStore({ timeoutMs: 20_000, idleTimeoutMs: 5_000, env: server.env });
    const data = Buffer.alloc(3_000_000);
    for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
    expect(await store.createIfAbsent("packs/resumed", data)).toBe(true);
    const cut = new Set<string>();
    const ranges: string[] = [];
    const proxy = await faultProxy(server.blobOrigin, (req) => {
      if (req.method !== "GET") return { kind: "pass" };
      ranges.push(String(req.headers["x-ms-range"] ?? req.headers.range ?? ""));
      const key = server.keyOfBlobUrl(req.url ?? "") ?? "";
      if (cut.has(key)) return { kind: "pass" };
      cut.add(key);
      return { kind: "reset", bytes: 200_000 };
    });
    server.routeBlobs(proxy.endpoint);
    try {
      const got = await store.read("packs/resumed");
      expect(got?.equals(data)).toBe(true);
      // The reset request, and one ranged from where it stopped (at least the bytes that came).
      expect(ranges).toHaveLength(2);
      expect(Number(/bytes=(\d+)-/.exec(ranges[1] as string)?.[1])).toBeGreaterThan(0);
      // A range of it (one entry read alone), reset once too: resumed within the range.
      cut.clear();
      const part = await buffer(await store.getRange("packs/resumed", 500_000, 2_000_000));
      expect(part.equals(data.subarray(500_000, 2_500_000))).toBe(true);
      expect(ranges).toHaveLength(4);
      expect(Number(/bytes=(\d+)-/.exec(ranges[3] as string)?.[1])).toBeGreaterThan(500_000);
    } finally {
      server.routeBlobs(null);
      await proxy.close();
    }
  });

  it("retries a busy service and then succeeds", async () => {
    const { store, proxy } = await storeBehind((n) =>
      n < 2 ? { kind: "status", status: 503 } : { kind: "pass" },
    );
    try {
      expect(await store.createIfAbsent("packs/retry", Buffer.from("payload"))).toBe(true);
      expect((await store.read("packs/retry"))?.toString()).toBe("payload");
    } finally {
      await proxy.close();
    }
  });
});
