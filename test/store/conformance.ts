import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { expect, it } from "vitest";
import { type DeferredEntries, deferredEntries } from "../../src/cache/lazy/deferred-entries.js";
import { EntryFetcher } from "../../src/cache/lazy/entry-fetcher.js";
import type { FramedRef } from "../../src/cache/lazy/lazy-plan.js";
import { findManifest } from "../../src/cache/lookup.js";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { decodeManifest, type Manifest } from "../../src/manifest/manifest.js";
import { MANIFESTS } from "../../src/store/layout.js";
import { isObjectFault, ObjectNotFound, type Store } from "../../src/store/store.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { corruptEntries, entryNames } from "../helpers/entry-compare.js";
import { tempDir } from "../helpers/sandbox.js";
import { storeContext } from "../helpers/store-context.js";

export interface Backend {
  store: Store;
  /** Whether list returns every match (false: only the newest, as GitHub's cache service answers). */
  fullListing: boolean;
  /** Milliseconds between writes for list order to be observable (S3 LastModified has 1 s steps). */
  listTickMs: number;
  /** Replaces an object's bytes behind the store's back (default: put over it). */
  tamper?: (object: string, data: Buffer) => Promise<void>;
}

/** Bytes generated on the fly: `total` of them, in 1 MiB chunks, never all in memory. */
function generated(total: number, seed = 1): Readable {
  let sent = 0;
  let n = seed;
  return new Readable({
    read() {
      if (sent >= total) {
        this.push(null);
        return;
      }
      const size = Math.min(1 << 20, total - sent);
      const chunk = Buffer.allocUnsafe(size);
      for (let i = 0; i < size; i += 4) {
        n = (n * 1664525 + 1013904223) >>> 0;
        chunk.writeUInt32LE(n, i);
      }
      sent += size;
      this.push(chunk);
    },
  });
}

async function sha(stream: Readable): Promise<string> {
  const h = createHash("sha256");
  for await (const c of stream) h.update(c as Buffer);
  return h.digest("hex");
}

/**
 * Runs the store conformance suite inside the caller's describe(). `traits`: whether createIfAbsent is
 * atomic on this backend (else a documented fallback), and whether it can delete (GitHub's cache
 * evicts by itself); what a backend cannot do is skipped by name, never silently.
 */
export function storeConformance(
  backend: () => Backend,
  traits: { atomicCreate: boolean; canDelete: boolean; objectFaults?: boolean },
): void {
  it("writes, reads and checks objects", async () => {
    const { store } = backend();
    await store.put("t/a/one", Readable.from([Buffer.from("hello "), Buffer.from("world")]));
    expect((await store.read("t/a/one"))?.toString()).toBe("hello world");
    expect((await buffer(await store.get("t/a/one"))).toString()).toBe("hello world");
    expect(await store.exists("t/a/one")).toBe(true);
    expect(await store.read("t/a/missing")).toBeNull();
    await expect(store.get("t/a/missing")).rejects.toBeInstanceOf(ObjectNotFound);
    expect(await store.exists("t/a/missing")).toBe(false);
  });

  it("reads a range of an object alone: its bytes from the offset, no more, and refuses one past the end", async () => {
    const { store } = backend();
    const data = Buffer.alloc(3_000_000);
    for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
    await store.put("t/r/pack", Readable.from([data]), data.length);
    for (const [offset, length] of [
      [0, 100],
      [1_234_567, 654_321],
      [data.length - 10, 10],
    ] as const)
      expect(
        (await buffer(await store.getRange("t/r/pack", offset, length))).equals(
          data.subarray(offset, offset + length),
        ),
      ).toBe(true);
    await expect(store.getRange("t/r/missing", 0, 1)).rejects.toBeInstanceOf(ObjectNotFound);
    await expect(store.getRange("t/r/pack", data.length - 10, 20).then((s) => buffer(s))).rejects.toThrow();
  });

  it.skipIf(!traits.objectFaults)(
    `a range of a missing object, one running past its end and one starting past it fail as that object's fault, never the store's (isObjectFault)${traits.objectFaults ? "" : " (skipped: not mapped for this store)"}`,
    async () => {
      const { store } = backend();
      await store.put("t/f/short", Readable.from([Buffer.alloc(1000, 7)]), 1000);
      const failure = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: unknown) => e,
        );
      for (const [object, offset, length] of [
        ["t/f/missing", 0, 10],
        ["t/f/short", 990, 20],
        ["t/f/short", 2000, 10],
      ] as const) {
        const e = await failure(store.getRange(object, offset, length).then((s) => buffer(s)));
        expect(e, `${object} at ${offset}`).not.toBeNull();
        expect(isObjectFault(e), `${object} at ${offset}: ${(e as Error).message}`).toBe(true);
      }
    },
  );

  it.skipIf(!traits.canDelete)(
    `deletes objects, and deleting a missing one is no error${traits.canDelete ? "" : " (skipped: this store cannot delete; its capabilities say so)"}`,
    async () => {
      const { store } = backend();
      expect(store.capabilities.delete).toBe(true);
      await store.put("t/d/one", Readable.from([Buffer.from("x")]));
      await store.delete("t/d/one");
      expect(await store.exists("t/d/one")).toBe(false);
      await store.delete("t/d/one");
    },
  );

  it("creates an object only if absent", async () => {
    const { store } = backend();
    expect(await store.createIfAbsent("t/c/m", Buffer.from("first"))).toBe(true);
    expect(await store.createIfAbsent("t/c/m", Buffer.from("second"))).toBe(false);
    expect((await store.read("t/c/m"))?.toString()).toBe("first");
  });

  it.skipIf(!traits.atomicCreate)(
    `lets exactly one of 8 racing creators win${traits.atomicCreate ? "" : " (skipped: this server ignores If-None-Match; the conditional proxy suite runs it)"}`,
    async () => {
      const { store } = backend();
      const racers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => store.createIfAbsent("t/c/race", Buffer.from(`writer ${i}`))),
      );
      expect(racers.filter(Boolean)).toHaveLength(1);
    },
  );

  it("lists by prefix, newest first", async () => {
    const { store, fullListing, listTickMs } = backend();
    for (const n of ["k-1", "k-2", "k-3"]) {
      await store.put(`${MANIFESTS}/s/${n}`, Readable.from([Buffer.from(n)]));
      await new Promise((r) => setTimeout(r, listTickMs));
    }
    await store.put(`${MANIFESTS}/s/other`, Readable.from([Buffer.from("x")]));
    const listed = (await store.list(`${MANIFESTS}/s/k-`)).map((o) => o.name);
    expect(listed[0]).toBe(`${MANIFESTS}/s/k-3`);
    if (fullListing)
      expect(listed).toEqual([`${MANIFESTS}/s/k-3`, `${MANIFESTS}/s/k-2`, `${MANIFESTS}/s/k-1`]);
  });

  it("streams an object over 100 MB both ways without holding it in memory", async () => {
    const { store } = backend();
    const total = 120 * 1024 * 1024;
    const expected = await sha(generated(total, 7));
    // Live buffer memory, sampled after a forced GC: garbage awaiting collection does not count.
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error("run with --expose-gc (vitest.config.ts sets it)");
    gc();
    let peak = 0;
    const base = process.memoryUsage().arrayBuffers;
    const sampler = setInterval(() => {
      gc();
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
    }, 20);
    try {
      const { size } = await store.put("t/big/object", generated(total, 7));
      expect(size).toBe(total);
      expect(await sha(await store.get("t/big/object"))).toBe(expected);
    } finally {
      clearInterval(sampler);
    }
    // Whole, it would be 120 MB; streamed, it is a few parts or chunks at a time.
    expect(peak).toBeLessThan(total * 0.75);
  }, 240_000);

  it("never shows an object whose upload failed midway", async () => {
    const { store } = backend();
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent > 20 * 1024 * 1024) {
          this.destroy(new Error("the network went away"));
          return;
        }
        sent += 1 << 20;
        this.push(Buffer.alloc(1 << 20, 1));
      },
    });
    await expect(store.put("t/broken/pack", failing)).rejects.toThrow();
    expect(await store.exists("t/broken/pack")).toBe(false);
    expect(await store.read("t/broken/pack")).toBeNull();
  });

  it("leaves exactly one valid manifest when 8 savers race for one key, and restores from it", async () => {
    const { store } = backend();
    const { atomicCreate } = traits;
    const dir = tempDir("race");
    const contexts = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const cache = path.join(dir, `runner-${i}`);
        generateTritonCache(cache, { entries: 6, totalBytes: 300_000, seed: 3 });
        return storeContext(store, cache, path.join(dir, `state-${i}`));
      }),
    );
    const reports = await Promise.all(contexts.map((c) => save(c)));
    const saved = reports.filter((r) => r.outcome === "saved").length;
    if (atomicCreate) expect(saved).toBe(1);
    else expect(saved).toBeGreaterThanOrEqual(1);
    const key = reports[0]?.primaryKey as string;
    const manifests = (await store.list(`${MANIFESTS}/`)).filter((o) =>
      o.name.endsWith(encodeURIComponent(key)),
    );
    expect(manifests).toHaveLength(1);
    const manifest = decodeManifest((await store.read(manifests[0]?.name as string)) as Buffer, "race");
    for (const p of manifest.packs) expect(await store.exists(p.object)).toBe(true);
    const r = await restore(await storeContext(store, path.join(dir, "restored"), path.join(dir, "state-r")));
    expect(r).toMatchObject({ cacheHit: true, entriesRestored: 6, entriesBad: 0 });
  });

  it("verifies what it reads: a tampered pack restores nothing of its own", async () => {
    const { store, tamper } = backend();
    const dir = tempDir("tamper");
    generateTritonCache(path.join(dir, "src"), { entries: 5, totalBytes: 200_000, seed: 4 });
    const s = await save(
      await storeContext(store, path.join(dir, "src"), path.join(dir, "s1"), { revision: "t".repeat(40) }),
    );
    expect(s.outcome).toBe("saved");
    const manifestName = (await store.list(`${MANIFESTS}/`)).find((o) => o.name.endsWith("t".repeat(40)))
      ?.name as string;
    const manifest = decodeManifest((await store.read(manifestName)) as Buffer, manifestName);
    const garbage = Buffer.from("not a pack at all");
    const object = manifest.packs[0]?.object as string;
    await (tamper ? tamper(object, garbage) : store.put(object, Readable.from([garbage])));
    const r = await restore(
      await storeContext(store, path.join(dir, "dest"), path.join(dir, "s2"), { revision: "t".repeat(40) }),
    );
    expect(r).toMatchObject({ entriesRestored: 0, entriesBad: 5 });
  });

  it("serves a lazy restore: each entry fetched alone by a ranged read of its frames, verified and placed whole; a damaged frame is refused", async () => {
    const { store, tamper } = backend();
    const dir = tempDir("lazy");
    const src = path.join(dir, "src");
    generateTritonCache(src, { entries: 6, totalBytes: 600_000, seed: 11 });
    const ctx = await storeContext(store, src, path.join(dir, "s1"), {
      revision: "l".repeat(40),
      lazy: true,
    });
    expect((await save(ctx)).outcome).toBe("saved");
    const m = (await findManifest(ctx))?.manifest as Manifest;
    expect(m.entries.every((e) => e.frame !== undefined)).toBe(true);
    const deferred: DeferredEntries = {};
    deferredEntries(ctx, m, m.entries as FramedRef[], deferred);

    const dest = path.join(dir, "dest");
    const fetcher = new EntryFetcher(store, "", [{ name: "triton", root: dest }], deferred);
    for (const e of m.entries) {
      fs.mkdirSync(path.join(dest, e.name), { recursive: true }); // as Triton's cache manager leaves it
      expect(await fetcher.lookup(path.join(dest, e.name), "k.json")).toEqual({
        placed: true,
        why: "fetched",
      });
    }
    expect(entryNames(dest)).toEqual(entryNames(src));
    expect(corruptEntries(src, dest)).toEqual([]);
    // Only the entries' own bytes were read: their frames, none twice.
    expect(fetcher.stats.bytesRead).toBe(m.entries.reduce((n, e) => n + (e.frame?.[1] ?? 0), 0));

    // One byte changed inside the third entry's frame: that entry is refused, and the store is not given up on.
    const object = m.packs[0]?.object as string;
    const pack = await buffer(await store.get(object));
    const victim = m.entries[2] as FramedRef;
    const at = victim.frame[0] + Math.floor(victim.frame[1] / 2);
    pack[at] = (pack[at] as number) ^ 0xff;
    await (tamper ? tamper(object, pack) : store.put(object, Readable.from([pack])));
    const again = path.join(dir, "again");
    const second = new EntryFetcher(store, "", [{ name: "triton", root: again }], deferred);
    const bad = await second.lookup(path.join(again, victim.name), "k.json");
    expect(bad.placed).toBe(false);
    expect(fs.existsSync(path.join(again, victim.name))).toBe(false);
    expect(second.stats).toMatchObject({ failed: 1, storeDown: null });
    const other = m.entries[0] as FramedRef;
    expect((await second.lookup(path.join(again, other.name), "k.json")).placed).toBe(true);
  });
}
