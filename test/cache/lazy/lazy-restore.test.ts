import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { JobLookups } from "../../../src/cache/lazy/job-lookups.js";
import { readState } from "../../../src/cache/local-state.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import type { HookUsage } from "../../../src/cache/usage/save-usage.js";
import { telemetryEnv } from "../../../src/telemetry/hook.js";
import { readTelemetry } from "../../../src/telemetry/read.js";
import { entryNames } from "../../helpers/entry-compare.js";
import { runSimWorkload, runSimWorkloadAsync } from "../../helpers/python-sim.js";
import { type Sandbox, sandbox, tempDir } from "../../helpers/sandbox.js";

const lazyConfig = (sb: Sandbox, folder: string) =>
  sb.config({
    caches: [{ name: "triton", kind: "triton", path: folder, restore: "lazy" }],
    store: { path: sb.store },
    key: { prefix: "bench" },
  });

function hookOf(file: string): HookUsage {
  const t = readTelemetry(file);
  return { complete: t.usageComplete, dirs: t.usedFolders, wrote: t.wroteFolders };
}

/**
 * Two saves: the first of a job that compiled 8 kernels and 2 autotuned ones, the second of a job
 * that used only 2 of the kernels (its key records that use). Returns every entry name of the key.
 */
async function keyWithRecordedUse(sb: Sandbox): Promise<string[]> {
  const a = path.join(sb.dir, "a");
  const tA = path.join(tempDir("t"), "a.jsonl");
  runSimWorkload(a, { plain: 8, autotuned: 2, env: telemetryEnv({}, tA) });
  const first = await save(await sb.context({ config: lazyConfig(sb, a), revision: "a".repeat(40) }), {
    hook: hookOf(tA),
  });
  expect(first.outcome).toBe("saved");
  const b = path.join(sb.dir, "b");
  const ctxB = await sb.context({
    config: lazyConfig(sb, b),
    revision: "b".repeat(40),
    stateDir: path.join(sb.dir, "state-b"),
  });
  await restore(ctxB);
  const tB = path.join(tempDir("t"), "b.jsonl");
  expect(runSimWorkload(b, { plain: 2, autotuned: 0, env: telemetryEnv({}, tB) }).compiled).toBe(0);
  expect((await save(ctxB, { hook: hookOf(tB) })).outcome).toMatch(/saved|nothing-new/);
  return entryNames(a);
}

describe("restore: lazy", () => {
  it("places what recent jobs used, fetches every other entry alone when the job looks it up, and the job compiles 0", async () => {
    const sb = sandbox();
    const all = await keyWithRecordedUse(sb);
    const c = path.join(sb.dir, "c");
    const ctx = await sb.context({
      config: lazyConfig(sb, c),
      revision: "c".repeat(40),
      stateDir: path.join(sb.dir, "state-c"),
    });
    const r = await restore(ctx, { servesLookups: true });
    expect(r.lazy).not.toBeNull();
    expect(r.lazy?.prefetched).toBeGreaterThan(0);
    expect((r.lazy?.prefetched ?? 0) + (r.lazy?.deferred ?? 0)).toBe(all.length);
    // Only the used entries are on disk before the job.
    expect(entryNames(c).length).toBe(r.lazy?.prefetched);

    const lookups = await JobLookups.start(ctx, readState(ctx.stateFile));
    expect(lookups).not.toBeNull();
    const t = path.join(tempDir("t"), "c.jsonl");
    const job = await runSimWorkloadAsync(c, {
      plain: 8,
      autotuned: 2,
      env: { ...telemetryEnv({}, t), ...lookups?.env() },
    });
    const lazy = await lookups?.stop(r.lazy?.prefetched ?? 0);
    expect(job.compiled).toBe(0);
    expect(job.loaded).toBeGreaterThan(0);
    expect(lazy).toMatchObject({ failed: 0, storeDown: null });
    expect(lazy?.onDemand).toBeGreaterThan(0);
    // The losing configs of the autotuned kernels are never looked up (the winner is recorded): they
    // stay in the store, as on a GPU most of an autotuned library's cache does.
    expect(lazy?.neverFetched).toBeGreaterThan(0);
    expect((lazy?.onDemand ?? 0) + (lazy?.neverFetched ?? 0)).toBe(r.lazy?.deferred);
    expect(entryNames(c).length).toBe((r.lazy?.prefetched ?? 0) + (lazy?.onDemand ?? 0));
    // Bytes read: the prefetched entries' frames and then each fetched entry's, never a whole pack twice.
    expect(lazy?.bytesRead).toBeGreaterThan(0);
    expect((lazy?.bytesRead ?? 0) + r.bytesDownloaded).toBeLessThanOrEqual(packBytes(sb.store));
  });

  it("a job that needs only what was prefetched never asks, and its save keeps the entries it never fetched in the key", async () => {
    const sb = sandbox();
    const all = await keyWithRecordedUse(sb);
    const d = path.join(sb.dir, "d");
    const ctx = await sb.context({
      config: lazyConfig(sb, d),
      revision: "d".repeat(40),
      stateDir: path.join(sb.dir, "state-d"),
    });
    const r = await restore(ctx, { servesLookups: true });
    const lookups = await JobLookups.start(ctx, readState(ctx.stateFile));
    const t = path.join(tempDir("t"), "d.jsonl");
    const job = await runSimWorkloadAsync(d, {
      plain: 2,
      autotuned: 0,
      env: { ...telemetryEnv({}, t), ...lookups?.env() },
    });
    const lazy = await lookups?.stop(r.lazy?.prefetched ?? 0);
    expect(job.compiled).toBe(0);
    expect(lazy?.onDemand).toBe(0);
    expect(lazy?.neverFetched).toBe(r.lazy?.deferred);
    const s = await save(ctx, { hook: hookOf(t) });
    expect(s.outcome).toMatch(/saved|nothing-new/);
    expect(s.entriesNew).toBe(0);
    // A fresh folder restoring d's key eagerly gets every entry: none was dropped for being unfetched.
    const e = path.join(sb.dir, "e");
    await restore(
      await sb.context({
        config: sb.config({
          caches: [{ name: "triton", kind: "triton", path: e }],
          store: { path: sb.store },
          key: { prefix: "bench" },
        }),
        revision: "d".repeat(40),
        stateDir: path.join(sb.dir, "state-e"),
      }),
    );
    expect(entryNames(e)).toEqual(all);
  });
});

/** Compressed bytes of every pack in a local store. */
function packBytes(store: string): number {
  let n = 0;
  for (const f of fs.readdirSync(store, { recursive: true, withFileTypes: true }))
    if (f.isFile() && f.name.endsWith(".tar.zst")) n += fs.statSync(path.join(f.parentPath, f.name)).size;
  return n;
}

describe("restore: lazy without kcache run", () => {
  it("a plain restore, which no process serves lookups for, restores the cache whole and says so", async () => {
    const sb = sandbox();
    const all = await keyWithRecordedUse(sb);
    const f = path.join(sb.dir, "plain");
    const lines: string[] = [];
    const ctx = await sb.context({
      config: lazyConfig(sb, f),
      revision: "f".repeat(40),
      stateDir: path.join(sb.dir, "s-plain"),
    });
    const r = await restore({ ...ctx, log: { ...ctx.log, info: (m: string) => lines.push(m) } });
    expect(r.lazy).toBeNull();
    expect(entryNames(f)).toEqual(all);
    expect(lines.join("\n")).toMatch(/restore: lazy needs kcache run.*restored whole here/);
  });
});
