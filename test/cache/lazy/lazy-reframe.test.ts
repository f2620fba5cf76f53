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
