import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { readCatalog } from "../../src/cache/catalog.js";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { prune } from "../../src/cache/usage/prune.js";
import { silentLog } from "../../src/log.js";
import type { Store } from "../../src/store/store.js";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { sandbox } from "../helpers/sandbox.js";
import { Tally } from "./harness.js";

/**
 * A delta save paused right after taking its lease while `prune --older-than 1h` runs, with clocks
 * 7 hours apart, beyond the 6-hour lease TTL, either way: the pruning host's clock ahead (its Date),
 * or the lease's time 7 h behind (a store that keeps a writer's clock: its mtime set back by the
 * test). No faketime: Date alone is faked in this process, and the store's files keep real times.
 */
const HOUR = 60 * 60 * 1000;
const SKEW = 7 * HOUR;

describe("prune under clock skew", () => {
  for (const [label, skew] of [
    ["the pruning host's clock 7 h ahead", "host-ahead"],
    ["the lease's time 7 h in the past (the writer's clock kept by the store)", "lease-behind"],
  ] as const) {
    it(`${label}, 3 rounds: no key is left referencing a deleted pack, and the new key restores whole`, async () => {
      const tally = new Tally(`prune under skew: ${label}`);
      for (let round = 0; round < 3; round++) {
        const sb = sandbox();
        const src = path.join(sb.dir, "triton");
        generateTritonCache(src, { entries: 20, totalBytes: 800_000, seed: 30 + round });
        const cfg = (p: string) =>
          sb.config({
            caches: [{ name: "triton", kind: "triton", path: p }],
            store: { path: sb.store },
            key: { prefix: "skew" },
          });
        expect((await save(await sb.context({ config: cfg(src), revision: "a".repeat(40) }))).outcome).toBe(
          "saved",
        );
        // The parent is old: prune --older-than 1h deletes its manifest, leaving its packs to the save's lease.
        const old = new Date(Date.now() - 2 * HOUR);
        for (const e of fs.readdirSync(sb.store, { recursive: true, withFileTypes: true }))
          if (e.isFile()) fs.utimesSync(path.join(e.parentPath, e.name), old, old);

        const job = path.join(sb.dir, "job");
        const jobCtx = () =>
          sb.context({ config: cfg(job), revision: "b".repeat(40), stateDir: path.join(sb.dir, "sj") });
        await restore(await jobCtx());
        writeKernelEntry(job, tritonKeyName(`skew-new-${round}`), `new_${round}`, 3000, rng(round));

        const ctx = await jobCtx();
        let paused = false;
        // The pause: after the save took its lease and checked its reused packs, while it uploads
        // its new pack and before it writes its manifest.
        const leased = async (name: string) => {
          if (paused || !name.startsWith("packs/")) return;
          paused = true;
          if (skew === "lease-behind") {
            const dir = path.join(sb.store, "leases");
            const behind = new Date(Date.now() - SKEW);
            for (const f of fs.readdirSync(dir)) fs.utimesSync(path.join(dir, f), behind, behind);
          } else vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + SKEW });
          try {
            await prune(ctx.store, { olderThanMs: HOUR, graceMs: 0 }, silentLog());
          } finally {
            vi.useRealTimers();
          }
        };
        const store: Store = {
          ...ctx.store,
          put: async (name: string, body: Readable, n?: number) => {
            const r = await ctx.store.put(name, body, n);
            await leased(name);
            return r;
          },
        };
        const saved = await save({ ...ctx, store });
        tally.run({ code: 0, seconds: saved.seconds, peakRssMb: null });
        tally.row.trials++;
        expect(paused).toBe(true);

        // Every key in the store names only packs that exist.
        for (const item of await readCatalog(ctx.store)) {
          const gone = (item.manifest?.packs ?? []).filter(
            (p) => !fs.existsSync(path.join(sb.store, ...p.object.split("/"))),
          );
          tally.row.corruptRestores += gone.length ? 1 : 0;
          expect(gone, item.key).toEqual([]);
        }
        const into = path.join(sb.dir, "into");
        const back = await restore(
          await sb.context({
            config: cfg(into),
            revision: "b".repeat(40),
            stateDir: path.join(sb.dir, "sr"),
          }),
        );
        expect(back.cacheHit).toBe(true);
        expect(back.entriesBad).toBe(0);
        expect(back.entriesRestored).toBe(21);
      }
      tally.save();
    });
  }
});
