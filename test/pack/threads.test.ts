import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobContext } from "../../src/cache/job-context.js";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { StoreError } from "../../src/errors.js";
import { decodeManifest } from "../../src/manifest/manifest.js";
import type { Store } from "../../src/store/store.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { type Sandbox, sandbox } from "../helpers/sandbox.js";

const REV = "3".repeat(40);
let server: S3Server;
beforeAll(async () => {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  server = await startS3rver();
});
afterAll(async () => {
  await server?.stop();
});

/** A job's context as $KCACHE_THREADS=n would make it (the job reads the environment once). */
function withThreads(ctx: JobContext, n: number): JobContext {
  return { ...ctx, runtime: { ...ctx.runtime, threads: n } };
}

/** Entries restored into `dest` (kcache's private folders aside), after checking each is whole. */
function wholeEntries(src: string, dest: string): number {
  expect(corruptEntries(src, dest)).toEqual([]);
  return fs.readdirSync(dest).filter((n) => !n.startsWith(".kcache-")).length;
}

function config(sb: Sandbox, cache: string, store: "local" | "s3", prefix: string) {
  return sb.config({
    caches: [{ name: "triton", kind: "triton", path: cache }],
    store:
      store === "local"
        ? { path: sb.store }
        : {
            type: "s3",
            bucket: server.bucket,
            prefix,
            region: "us-east-1",
            endpoint: server.endpoint,
            "path-style": true,
          },
    key: { prefix: "threads" },
    save: { "pack-mib": 1 },
  });
}

describe("packs read and written by worker threads", () => {
  it.each(["local", "s3"] as const)(
    "a %s store: packs built on threads restore on threads, entry for entry as saved, at another path",
    async (store) => {
      const sb = sandbox();
      const src = path.join(sb.dir, "triton");
      generateTritonCache(src, { entries: 40, totalBytes: 6_000_000, seed: 5 });
      const prefix = `threads-${Date.now()}/`;
      // Eight cores' worth: two builder threads, each with its own zstd threads.
      const saved = await save(
        withThreads(await sb.context({ config: config(sb, src, store, prefix), revision: REV }), 8),
      );
      expect(saved).toMatchObject({ outcome: "saved", entriesNew: 40 });
      expect(saved.packsWritten).toBeGreaterThan(2);
      const dest = path.join(sb.dir, "elsewhere");
      const r = await restore(
        withThreads(
          await sb.context({
            config: config(sb, dest, store, prefix),
            revision: REV,
            stateDir: path.join(sb.dir, "s2"),
          }),
          2,
        ),
      );
      expect(r).toMatchObject({ threads: 2, entriesRestored: 40, entriesBad: 0, faults: [] });
      expect(wholeEntries(src, dest)).toBe(40);
      expect(fs.readdirSync(dest).filter((n) => n.startsWith(".kcache-restore"))).toEqual([]);
    },
  );

  it("a store that fails uploads ends a save on threads with the store's error, starting no further pack", async () => {
    const sb = sandbox();
    const src = path.join(sb.dir, "triton");
    generateTritonCache(src, { entries: 40, totalBytes: 6_000_000, seed: 7 });
    const ctx = await sb.context({ config: config(sb, src, "local", ""), revision: REV });
    let puts = 0;
    const failing: Store = {
      ...ctx.store,
      put: async (_name, body) => {
        puts++;
        for await (const _chunk of body) break;
        throw new StoreError("local store: no space left on device (injected)");
      },
    };
    const t0 = Date.now();
    await expect(save(withThreads({ ...ctx, store: failing }, 8))).rejects.toThrow(/injected/);
    expect(Date.now() - t0).toBeLessThan(20_000);
    // Two threads: at most the two packs under way when the first failed were started.
    expect(puts).toBeLessThanOrEqual(2);
    expect(fs.existsSync(path.join(sb.store, "manifests"))).toBe(false);
  });

  it("a corrupted pack read by a thread costs only its own entries; the threads' other packs restore whole", async () => {
    const sb = sandbox();
    const src = path.join(sb.dir, "triton");
    generateTritonCache(src, { entries: 40, totalBytes: 6_000_000, seed: 6 });
    await save(await sb.context({ config: config(sb, src, "local", ""), revision: REV }));
    const manifestFile = fs
      .readdirSync(path.join(sb.store, "manifests"), { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => path.join(d.parentPath, d.name))[0] as string;
    const manifest = decodeManifest(fs.readFileSync(manifestFile), manifestFile);
    const object = manifest.packs[1]?.object;
    if (!object) throw new Error("the fixture saved fewer than two packs");
    const victim = path.join(sb.store, ...object.split("/"));
    const bytes = fs.readFileSync(victim);
    for (let i = 300; i < bytes.length; i += 101) bytes[i] = (bytes[i] as number) ^ 0x55;
    fs.writeFileSync(victim, bytes);
    const dest = path.join(sb.dir, "elsewhere");
    const r = await restore(
      withThreads(
        await sb.context({
          config: config(sb, dest, "local", ""),
          revision: REV,
          stateDir: path.join(sb.dir, "s2"),
        }),
        2,
      ),
    );
    const inVictim = manifest.entries.filter((e) => e.pack === 1).length;
    expect(r.threads).toBe(2);
    expect(r.entriesBad).toBeGreaterThan(0);
    expect(r.entriesBad).toBeLessThanOrEqual(inVictim);
    expect(r.entriesRestored).toBe(40 - r.entriesBad);
    expect(wholeEntries(src, dest)).toBe(r.entriesRestored);
  });
});
