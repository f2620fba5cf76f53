import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { JobContext } from "../../../src/cache/job-context.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { decodeManifest, type Manifest } from "../../../src/manifest/manifest.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { corruptEntries, entryNames } from "../../helpers/entry-compare.js";
import { type Sandbox, sandbox } from "../../helpers/sandbox.js";

/** A job of this sandbox on folder `name`: its own state folder, restore: lazy or not, the save settings given. */
async function job(
  sb: Sandbox,
  name: string,
  opts: { lazy: boolean; save?: Record<string, unknown>; env?: NodeJS.ProcessEnv },
) {
  const folder = path.join(sb.dir, name);
  const lines: string[] = [];
  const ctx = await sb.context({
    config: sb.config({
      caches: [{ name: "triton", kind: "triton", path: folder, ...(opts.lazy ? { restore: "lazy" } : {}) }],
      store: { path: sb.store },
      key: { prefix: "bench" },
      ...(opts.save ? { save: opts.save } : {}),
    }),
    revision: name.padEnd(40, "0"),
    stateDir: path.join(sb.dir, `state-${name}`),
    env: opts.env,
  });
  const logged: JobContext = { ...ctx, log: { ...ctx.log, info: (m: string) => lines.push(m) } };
  /** The hook's record of a job that looked up these entries (and only these). */
  const used = (names: string[]) => ({
    hook: { complete: true, dirs: names.map((n) => path.join(folder, n)) },
  });
  return { folder, ctx: logged, lines, used };
}

/** The manifest a key's save left in the sandbox's local store. */
function manifestOf(sb: Sandbox, key: string): Manifest {
  const file = path.join(sb.store, "manifests", "branch%2Fmain", encodeURIComponent(key));
  return decodeManifest(fs.readFileSync(file), file);
}

const sizeOf = (dir: string, names: string[]) =>
  names.reduce(
    (n, e) =>
      n + fs.readdirSync(path.join(dir, e)).reduce((m, f) => m + fs.statSync(path.join(dir, e, f)).size, 0),
    0,
  );

describe("turning restore: lazy on for a key saved without it", () => {
  it("the lazy restore reads its packs whole and says why; one save packs its entries again in frames, though nothing is new; the next lazy restore places only what the job uses", async () => {
    const sb = sandbox();
    // Two eager jobs: the first compiles the cache, the second uses half of it (its save records that).
    const a = await job(sb, "a", { lazy: false });
    generateTritonCache(a.folder, { entries: 40, totalBytes: 2_000_000, seed: 7 });
    const all = entryNames(a.folder);
    const half = all.filter((_, i) => i % 2 === 0);
    expect((await save(a.ctx)).outcome).toBe("saved");
    const b = await job(sb, "b", { lazy: false });
    await restore(b.ctx);
    expect((await save(b.ctx, b.used(half))).outcome).toBe("nothing-new");

    // Lazy on: the packs have no frames, so the restore reads them whole, and says so.
    const c = await job(sb, "c", { lazy: true });
    const rc = await restore(c.ctx, { servesLookups: true });
    expect(rc.entriesRestored).toBe(all.length);
    expect(rc.lazy?.readWhole["no-frames"]).toMatchObject({ entries: all.length });
    expect(c.lines.join("\n")).toMatch(/pack\(s\) read whole .*before the cache was lazy/);
    // The job uses the same half; nothing is new, yet the save writes the key's entries framed.
    const sc = await save(c.ctx, c.used(half));
    expect(sc).toMatchObject({ outcome: "saved", entriesNew: 0, entries: all.length });
    expect(sc.reframed).toMatchObject({ reason: "no-frames", entries: all.length });
    expect(c.lines.join("\n")).toMatch(/packed again, each in frames of its own/);
    expect(manifestOf(sb, c.ctx.key).entries.every((e) => e.frame)).toBe(true);

    // The next lazy restore places what the last job used, and leaves the rest in the store.
    const d = await job(sb, "d", { lazy: true });
    const rd = await restore(d.ctx, { servesLookups: true });
    expect(rd.lazy?.readWhole["no-frames"]).toBeUndefined();
    expect(rd.lazy?.deferred).toBe(all.length - half.length);
    const sd = await save(d.ctx, d.used(half));
    expect(sd.usage.live.bytes).toBe(sizeOf(a.folder, half));
    expect(rd.bytesRestored).toBeLessThanOrEqual(1.1 * sd.usage.live.bytes);
    // A key already framed is not packed again.
    expect(sd).toMatchObject({ outcome: "nothing-new", packsWritten: 0, reframed: null });
  });

  it("where the engine cannot end frames, the save leaves the key's packs as they are", async () => {
    const sb = sandbox();
    const a = await job(sb, "a", { lazy: false });
    generateTritonCache(a.folder, { entries: 20, totalBytes: 1_000_000, seed: 8 });
    await save(a.ctx);
    const c = await job(sb, "c", { lazy: true, env: { KCACHE_ZSTD: "system" } });
    await restore(c.ctx, { servesLookups: true });
    const sc = await save(c.ctx, c.used(entryNames(c.folder).slice(0, 3)));
    expect(sc).toMatchObject({ outcome: "nothing-new", packsWritten: 0, reframed: null });
  });
});

describe("a consolidation after a lazy restore", () => {
  it("leaves the entries the restore left in the store in their packs, whole", async () => {
    const sb = sandbox();
    const settings = { lazy: true, save: { "max-chain": 1, "max-dead-share": 0 } };
    const a = await job(sb, "a", settings);
    generateTritonCache(a.folder, { entries: 20, totalBytes: 4_000_000, seed: 9 });
    await save(a.ctx);
    const source = path.join(sb.dir, "source");
    fs.cpSync(a.folder, source, { recursive: true });
    // Jobs that each compile two entries and use only those: small packs, consolidated at every
    // other save (c's holds b's entries, unused since), then d's lazy restore. d also drops one of
    // c's entries: its save consolidates for the dead bytes as well as the chain.
    let last = a;
    let made: string[] = [];
    for (const [name, seed, bytes] of [
      ["b", 10, 150_000],
      ["c", 11, 100_000],
      ["d", 12, 100_000],
    ] as const) {
      const j = await job(sb, name, settings);
      const r = await restore(j.ctx, { servesLookups: name === "d" });
      if (name === "d")
        for (const dir of [j.folder, source])
          fs.rmSync(path.join(dir, made[0] as string), { recursive: true });
      const fresh = path.join(sb.dir, `fresh-${name}`);
      generateTritonCache(fresh, { entries: 2, totalBytes: bytes, seed });
      made = entryNames(fresh);
      for (const e of made) {
        fs.cpSync(path.join(fresh, e), path.join(source, e), { recursive: true });
        fs.renameSync(path.join(fresh, e), path.join(j.folder, e));
      }
      const s = await save(j.ctx, j.used(made));
      expect(s.outcome, name).toBe("saved");
      if (name === "d") {
        // d's restore left the entries of a and b in the store, and its save consolidated.
        expect(r.lazy?.deferred).toBe(22);
        expect(s.consolidated).toBe(true);
      }
      last = j;
    }
    const m = manifestOf(sb, last.ctx.key);
    expect(m.entries.length).toBe(entryNames(source).length);
    const e = await job(sb, "e", { lazy: false });
    await restore({ ...e.ctx, key: last.ctx.key });
    expect(entryNames(e.folder)).toEqual(entryNames(source));
    expect(corruptEntries(source, e.folder)).toEqual([]);
  });
});
