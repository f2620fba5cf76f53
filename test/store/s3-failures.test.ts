import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Strictness } from "../../src/cache/faults.js";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { tolerateCacheFailure } from "../../src/cache/tolerate.js";
import { KcacheError } from "../../src/errors.js";
import { DEFAULT_S3, s3Store } from "../../src/store/s3.js";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { type Fault, faultProxy } from "../helpers/fault-proxy.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";
import { storeContext } from "../helpers/store-context.js";

let server: S3Server;
let n = 0;
beforeAll(async () => {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  server = await startS3rver();
});
afterAll(async () => {
  await server?.stop();
});

function storeAt(
  endpoint: string,
  idleTimeoutMs = 5000,
  prefix = `f-${++n}/`,
  retry = { attempts: 4, baseDelayMs: 50, maxDelayMs: 5000 },
) {
  return s3Store({
    ...DEFAULT_S3,
    bucket: server.bucket,
    prefix,
    region: "us-east-1",
    endpoint,
    forcePathStyle: true,
    idleTimeoutMs,
    connectTimeoutMs: 2000,
    retry,
  });
}

/** A store that gives up fast: 1.5 s idle, one retry (the faults below are meant to end the transfer). */
function quickStore(endpoint: string, prefix: string) {
  return storeAt(endpoint, 1500, prefix, { attempts: 2, baseDelayMs: 50, maxDelayMs: 500 });
}

function ctxFor(store: ReturnType<typeof storeAt>, cache: string, state: string) {
  return storeContext(store, cache, state, { revision: "e".repeat(40), prefix: "f" });
}

describe("S3 store failures (fault proxy in front of s3rver)", () => {
  it.each([
    [503, "ServiceUnavailable"],
    [429, "SlowDown"],
  ])("retries a %i and honours Retry-After before trying again", async (status) => {
    let puts = 0;
    const proxy = await faultProxy(server.endpoint, (req) =>
      req.method === "PUT" && puts++ < 2
        ? ({ kind: "status", status, retryAfter: "1" } as Fault)
        : { kind: "pass" },
    );
    try {
      const dir = tempDir();
      generateTritonCache(path.join(dir, "c"), { entries: 3, totalBytes: 60_000 });
      const r = await save(await ctxFor(storeAt(proxy.endpoint), path.join(dir, "c"), path.join(dir, "s")));
      expect(r.outcome).toBe("saved");
      const seen = proxy.log.filter((l) => l.method === "PUT");
      expect(seen.slice(0, 3).map((l) => l.fault)).toEqual(["status", "status", "pass"]);
      // Retry-After: 1 was honoured between each injected failure and the next attempt.
      expect((seen[1]?.at ?? 0) - (seen[0]?.at ?? 0)).toBeGreaterThanOrEqual(900);
      expect((seen[2]?.at ?? 0) - (seen[1]?.at ?? 0)).toBeGreaterThanOrEqual(900);
    } finally {
      await proxy.close();
    }
  });

  it("tries again where a connection was reset before any answer (a keep-alive connection the server closed), and a save goes through", async () => {
    let dropped = 0;
    const proxy = await faultProxy(server.endpoint, (req) =>
      req.method === "PUT" && dropped++ < 2 ? { kind: "drop" } : { kind: "pass" },
    );
    try {
      const dir = tempDir();
      generateTritonCache(path.join(dir, "c"), { entries: 3, totalBytes: 60_000 });
      const r = await save(await ctxFor(storeAt(proxy.endpoint), path.join(dir, "c"), path.join(dir, "s")));
      expect(r.outcome).toBe("saved");
      expect(r.faults).toEqual([]);
      expect(proxy.log.filter((l) => l.fault === "drop")).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });

  it("gives up on a hung store after one idle timeout, with one warning, and the job goes on", async () => {
    const proxy = await faultProxy(server.endpoint, () => ({ kind: "hang" }));
    try {
      const dir = tempDir();
      const ctx = await ctxFor(storeAt(proxy.endpoint, 1000), path.join(dir, "c"), path.join(dir, "s"));
      const r = await tolerateCacheFailure("restore", Strictness.none, ctx.log, () => restore(ctx));
      expect(r).toBeNull();
      expect(ctx.log.warnings).toHaveLength(1);
      expect(ctx.log.warnings[0]).toMatch(/^restore skipped: s3:\/\/.*TimeoutError/);
      // Timeouts are not retried: one request, so one idle timeout, however many retries are allowed.
      expect(proxy.log).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  it("treats a manifest of garbage as damaged: a miss, never a crash", async () => {
    const dir = tempDir();
    const prefix = `g-${++n}/`;
    generateTritonCache(path.join(dir, "c"), { entries: 3, totalBytes: 60_000 });
    await save(
      await ctxFor(storeAt(server.endpoint, 5000, prefix), path.join(dir, "c"), path.join(dir, "s")),
    );
    const proxy = await faultProxy(server.endpoint, (req) =>
      req.method === "GET" && req.url?.includes("manifests") && !req.url.includes("list-type")
        ? { kind: "garbage" }
        : { kind: "pass" },
    );
    try {
      const ctx = await ctxFor(
        storeAt(proxy.endpoint, 5000, prefix),
        path.join(dir, "d"),
        path.join(dir, "s2"),
      );
      const r = await restore(ctx);
      expect(r.matchedKey).toBeNull();
      expect(ctx.log.warnings.join("\n")).toMatch(/manifest/);
      expect(fs.existsSync(path.join(dir, "d"))).toBe(false);
    } finally {
      await proxy.close();
    }
  });

  it("resumes a pack download the connection reset, from the last byte received: every entry restored", async () => {
    const dir = tempDir();
    const prefix = `r-${++n}/`;
    generateTritonCache(path.join(dir, "c"), { entries: 40, totalBytes: 4_000_000, seed: 9 });
    await save(
      await ctxFor(storeAt(server.endpoint, 5000, prefix), path.join(dir, "c"), path.join(dir, "s")),
    );
    const cut = new Set<string>();
    const proxy = await faultProxy(server.endpoint, (req) => {
      // The first download of each pack is reset mid-body; what follows is the store answering.
      if (req.method !== "GET" || !req.url?.includes("packs") || cut.has(req.url)) return { kind: "pass" };
      cut.add(req.url);
      return { kind: "reset", bytes: 50_000 };
    });
    try {
      const ctx = await ctxFor(
        storeAt(proxy.endpoint, 5000, prefix),
        path.join(dir, "d"),
        path.join(dir, "s2"),
      );
      const r = await restore(ctx);
      expect(cut.size).toBeGreaterThan(0);
      expect(r).toMatchObject({ entriesBad: 0, entriesRestored: 40 });
      expect(ctx.log.warnings).toEqual([]);
      const ranged = proxy.log.filter((l) => l.url.includes("packs")).length;
      expect(ranged).toBe(cut.size * 2); // each pack: the reset request and one resumed from where it stopped
      expect(corruptEntries(path.join(dir, "c"), path.join(dir, "d"))).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it("writes only whole, verified entries when a store keeps cutting a pack download short", async () => {
    const dir = tempDir();
    const prefix = `t-${++n}/`;
    generateTritonCache(path.join(dir, "c"), { entries: 40, totalBytes: 4_000_000, seed: 9 });
    await save(
      await ctxFor(storeAt(server.endpoint, 5000, prefix), path.join(dir, "c"), path.join(dir, "s")),
    );
    const proxy = await faultProxy(server.endpoint, (req) =>
      req.method === "GET" && req.url?.includes("packs")
        ? { kind: "truncate", bytes: 20_000 }
        : { kind: "pass" },
    );
    try {
      const ctx = await ctxFor(
        storeAt(proxy.endpoint, 5000, prefix),
        path.join(dir, "d"),
        path.join(dir, "s2"),
      );
      const r = await restore(ctx);
      expect(r.entriesBad).toBeGreaterThan(0);
      expect(r.entriesRestored + r.entriesBad).toBe(40);
      expect(ctx.log.warnings).toHaveLength(1);
      // Every entry on disk is complete: it has its group file and every file the group lists.
      for (const e of fs.readdirSync(path.join(dir, "d")).filter((x) => !x.startsWith(".kcache-"))) {
        const files = fs.readdirSync(path.join(dir, "d", e));
        const src = fs.readdirSync(path.join(dir, "c", e));
        expect(files.sort()).toEqual(src.sort());
      }
    } finally {
      await proxy.close();
    }
  });

  it("with the store down, restore is a miss and save a skip, each one warning, exit 0 (3 with --strict)", async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const dir = tempDir("down");
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      `caches:\n  - name: triton\n    kind: triton\n    path: ${path.join(dir, "c")}\nstore:\n  type: s3\n  bucket: ${server.bucket}\n  endpoint: http://127.0.0.1:${closed}\n  path-style: true\n  connect-timeout: 2s\n`,
    );
    generateTritonCache(path.join(dir, "c"), { entries: 3, totalBytes: 60_000 });
    const env = {
      PATH: process.env.PATH,
      PYTHONPATH: installedStack(),
      HOME: dir,
      ...S3RVER_CREDENTIALS,
      GITHUB_SHA: "a".repeat(40),
      GITHUB_REF: "refs/heads/main",
      KCACHE_STATE_DIR: path.join(dir, "s"),
    };
    for (const cmd of ["restore", "save"]) {
      const r = await runCli([cmd], { env, cwd: dir });
      expect(r.code).toBe(0);
      expect(r.stderr.match(/warning:/g)).toHaveLength(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `warning: ${cmd} skipped: s3://${server.bucket}/ at http://127.0.0.1:${closed}: .*ECONNREFUSED`,
        ),
      );
    }
    expect((await runCli(["save", "--strict"], { env, cwd: dir })).code).toBe(3);
  });
});

/** A key saved straight to s3rver, then a restore through a proxy that fails pack downloads with `fault`. */
async function restoreThrough(fault: Fault, strict: boolean) {
  const dir = tempDir();
  const prefix = `sf-${++n}/`;
  generateTritonCache(path.join(dir, "c"), { entries: 30, totalBytes: 3_000_000, seed: 4 });
  const saved = await save(
    await storeContext(quickStore(server.endpoint, prefix), path.join(dir, "c"), path.join(dir, "s"), {
      revision: "e".repeat(40),
    }),
  );
  expect(saved.outcome).toBe("saved");
  const proxy = await faultProxy(server.endpoint, (req) =>
    req.method === "GET" && req.url?.includes("packs") ? fault : { kind: "pass" },
  );
  try {
    const ctx = await storeContext(
      quickStore(proxy.endpoint, prefix),
      path.join(dir, "d"),
      path.join(dir, "s2"),
      {
        revision: "e".repeat(40),
      },
    );
    ctx.strict = strict ? Strictness.all : Strictness.none;
    try {
      return {
        report: await tolerateCacheFailure("restore", ctx.strict, ctx.log, () => restore(ctx)),
        ctx,
        error: null,
      };
    } catch (e) {
      return { report: null, ctx, error: e as KcacheError };
    }
  } finally {
    await proxy.close();
  }
}

describe("S3 faults end in one warning (exit 0) or, with --strict, exit 3; never a hang", () => {
  it("a pack download that stalls midway fails after one idle timeout", async () => {
    const { report, ctx } = await restoreThrough({ kind: "stall", bytes: 100_000 }, false);
    // Entries that arrived whole before the stall verify on their own and stay; the rest are bad.
    expect(report?.entriesRestored).toBeLessThan(30);
    expect((report?.entriesRestored ?? 0) + (report?.entriesBad ?? 0)).toBe(30);
    expect(ctx.log.warnings.join("\n")).toMatch(/stalled download|sent nothing/);
  });

  it.each([
    ["stalls", { kind: "stall", bytes: 100_000 } as Fault],
    ["is cut short", { kind: "truncate", bytes: 100_000 } as Fault],
    ["answers garbage", { kind: "garbage" } as Fault],
    ["answers 503", { kind: "status", status: 503 } as Fault],
  ])("with --strict, a pack download that %s exits 3", async (_what, fault) => {
    const { error } = await restoreThrough(fault, true);
    expect(error).toBeInstanceOf(KcacheError);
    expect(error?.exitCode).toBe(3);
  });

  it("a server answering 200 to everything is a fault, never 'key already exists'", async () => {
    const proxy = await faultProxy(server.endpoint, () => ({ kind: "garbage" }));
    try {
      const dir = tempDir();
      generateTritonCache(path.join(dir, "c"), { entries: 3, totalBytes: 60_000 });
      const ctx = await storeContext(
        quickStore(proxy.endpoint, `g200-${++n}/`),
        path.join(dir, "c"),
        path.join(dir, "s"),
      );
      const lenient = await tolerateCacheFailure("save", Strictness.none, ctx.log, () => save(ctx));
      expect(lenient).toBeNull();
      expect(ctx.log.warnings).toHaveLength(1);
      expect(ctx.log.warnings[0]).toMatch(/^save skipped: .*manifest.*nothing saved/);
      ctx.strict = Strictness.all;
      await expect(
        tolerateCacheFailure("save", Strictness.all, ctx.log, () => save(ctx)),
      ).rejects.toMatchObject({
        exitCode: 3,
      });
    } finally {
      await proxy.close();
    }
  });
});
