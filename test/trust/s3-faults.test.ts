import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Strictness } from "../../src/cache/faults.js";
import { restore } from "../../src/cache/restore.js";
import { save } from "../../src/cache/save.js";
import { tolerateCacheFailure } from "../../src/cache/tolerate.js";
import { KcacheError } from "../../src/errors.js";
import { DEFAULT_S3, s3Store } from "../../src/store/s3.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
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

function storeAt(endpoint: string, prefix: string) {
  return s3Store({
    ...DEFAULT_S3,
    bucket: server.bucket,
    prefix,
    region: "us-east-1",
    endpoint,
    forcePathStyle: true,
    idleTimeoutMs: 1500,
    connectTimeoutMs: 2000,
    retry: { attempts: 2, baseDelayMs: 50, maxDelayMs: 500 },
  });
}

/** A key saved straight to s3rver, then a restore through a proxy that fails pack downloads with `fault`. */
async function restoreThrough(fault: Fault, strict: boolean) {
  const dir = tempDir();
  const prefix = `sf-${++n}/`;
  generateTritonCache(path.join(dir, "c"), { entries: 30, totalBytes: 3_000_000, seed: 4 });
  const saved = await save(
    await storeContext(storeAt(server.endpoint, prefix), path.join(dir, "c"), path.join(dir, "s"), {
      revision: "e".repeat(40),
    }),
  );
  expect(saved.outcome).toBe("saved");
  const proxy = await faultProxy(server.endpoint, (req) =>
    req.method === "GET" && req.url?.includes("packs") ? fault : { kind: "pass" },
  );
  try {
    const ctx = await storeContext(
      storeAt(proxy.endpoint, prefix),
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
        storeAt(proxy.endpoint, `g200-${++n}/`),
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
