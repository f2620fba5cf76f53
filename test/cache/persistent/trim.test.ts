import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { markJob, unmarkJob } from "../../../src/cache/persistent/live-jobs.js";
import { trimLine } from "../../../src/cache/persistent/settle.js";
import { trimFolder } from "../../../src/cache/persistent/trim.js";
import { planTrim, type TrimCandidate } from "../../../src/cache/persistent/trim-plan.js";
import { tritonKind } from "../../../src/kinds/triton.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { runCli } from "../../helpers/cli.js";
import { entryNames } from "../../helpers/entry-compare.js";
import { project } from "../../helpers/project.js";
import { tempDir } from "../../helpers/sandbox.js";

const HOUR = 3600_000;
const NOW = Date.parse("2026-12-01T12:00:00Z");

function candidate(
  name: string,
  size: number,
  hoursAgo: number,
  over: Partial<TrimCandidate> = {},
): TrimCandidate {
  return {
    name,
    size,
    lastUse: NOW - hoursAgo * HOUR,
    usedByThisJob: false,
    otherJobMayRead: false,
    inKey: false,
    ...over,
  };
}

/** Bytes of the folder's entry files, counted from the disk (kcache's private files left out). */
function diskBytes(root: string): number {
  let n = 0;
  for (const e of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(root, path.join(e.parentPath, e.name));
    if (e.isFile() && !rel.split(path.sep)[0]?.startsWith(".kcache-"))
      n += fs.statSync(path.join(root, rel)).size;
  }
  return n;
}

/** Sets every file of each entry's last modification and access to `hoursAgo` before now. */
function age(root: string, names: string[], hoursAgo: number): void {
  const t = new Date(Date.now() - hoursAgo * HOUR);
  for (const n of names)
    for (const f of fs.readdirSync(path.join(root, n))) fs.utimesSync(path.join(root, n, f), t, t);
}

describe("trim: a bounded persistent folder", () => {
  it("plans least recently used first, entries outside the restored key before those in it, never one in use", () => {
    const plan = planTrim(
      [
        candidate("old-key", 100, 50, { inKey: true }),
        candidate("old", 100, 40),
        candidate("used", 100, 30, { usedByThisJob: true }),
        candidate("read-by-another-job", 100, 20, { otherJobMayRead: true }),
        candidate("newer", 100, 10),
        candidate("newest", 100, 1),
      ],
      { maxSize: 300, olderThanMs: null, now: NOW },
    );
    // The key's entry goes last: the next restore would bring it back, but only by downloading it.
    expect([...plan.remove].sort()).toEqual(["newer", "newest", "old"]);
    expect(plan.after).toEqual({ entries: 3, bytes: 300 });
    expect(plan.spared).toEqual({ usedByThisJob: 1, otherJobs: 1 });

    const aged = planTrim(
      [candidate("a", 10, 30), candidate("b", 10, 2), candidate("c", 10, 48, { usedByThisJob: true })],
      {
        maxSize: null,
        olderThanMs: 24 * HOUR,
        now: NOW,
      },
    );
    expect([...aged.remove]).toEqual(["a"]);
    expect(aged.spared.usedByThisJob).toBe(1);
  });

  it("removes the least recently used entries whole until the folder fits, and its report equals the disk", async () => {
    const root = path.join(tempDir("trim"), "triton");
    const entries = generateTritonCache(root, { entries: 20, totalBytes: 2_000_000 });
    const names = entryNames(root);
    const aged = names.slice(0, 10);
    age(root, aged, 48);
    const before = diskBytes(root);
    // Exactly what the aged entries hold must go.
    const agedBytes = aged.reduce((n, e) => n + diskBytes(path.join(root, e)), 0);
    const maxSize = before - agedBytes;
    const dry = await trimFolder({ name: "triton", path: root }, tritonKind, {
      maxSize,
      olderThanMs: null,
      dryRun: true,
    });
    expect(entryNames(root)).toEqual(names);
    expect(dry.before.bytes).toBe(before);

    const r = await trimFolder({ name: "triton", path: root }, tritonKind, {
      maxSize,
      olderThanMs: null,
      dryRun: false,
    });
    expect(r).toMatchObject({ removed: dry.removed, after: dry.after });
    expect(r.after.bytes).toBeLessThanOrEqual(maxSize);
    expect(diskBytes(root)).toBe(r.after.bytes);
    expect(entryNames(root)).toHaveLength(r.after.entries);
    // Only aged entries went, and only whole: what is left is complete.
    for (const n of names.slice(10)) expect(entryNames(root)).toContain(n);
    for (const n of entryNames(root))
      expect(
        tritonKind.incompleteReason(root, {
          name: n,
          files: fs
            .readdirSync(path.join(root, n))
            .map((rel) => ({ rel, size: 0, mtimeMs: 0, atimeMs: 0, ino: 0 })),
        }),
      ).toBeNull();
    expect(fs.readdirSync(root).filter((n) => n.startsWith(".kcache-trash-"))).toEqual([]);
    expect(entries).toHaveLength(20);
  });

  it("spares what a job still running in the folder may read, and what the job that just ended used", async () => {
    const root = path.join(tempDir("trim-live"), "triton");
    generateTritonCache(root, { entries: 10, totalBytes: 1_000_000 });
    const names = entryNames(root);
    age(root, names, 48);
    // Another job began after them, and touched half of the entries since (its reads, its restore's stamps).
    await new Promise((r) => setTimeout(r, 300));
    const marker = markJob(root, process.pid, { isolated: false, trusted: true });
    await new Promise((r) => setTimeout(r, 300));
    const touched = names.slice(0, 5);
    age(root, touched, 0);
    const r = await trimFolder({ name: "triton", path: root }, tritonKind, {
      maxSize: 0,
      olderThanMs: null,
      dryRun: false,
      used: new Set(names.slice(5, 7)),
    });
    expect(entryNames(root)).toEqual([...touched, ...names.slice(5, 7)].sort());
    expect(r.spared).toEqual({ usedByThisJob: 2, otherJobs: 5 });
    // Once that job ended, the same trim takes them.
    unmarkJob(root, marker);
    await trimFolder({ name: "triton", path: root }, tritonKind, {
      maxSize: 0,
      olderThanMs: null,
      dryRun: false,
    });
    expect(entryNames(root)).toEqual([]);
  });

  it("a job isolated in a folder of its own does not hold a trim back: its links keep what it reads", async () => {
    const root = path.join(tempDir("trim-iso"), "triton");
    generateTritonCache(root, { entries: 4, totalBytes: 400_000 });
    markJob(root, process.pid, { isolated: true, trusted: true }, Date.now() - HOUR);
    const r = await trimFolder({ name: "triton", path: root }, tritonKind, {
      maxSize: 0,
      olderThanMs: null,
      dryRun: false,
    });
    expect(r.removed.entries).toBe(4);
  });

  it("says sizes as people read them: a 20GB max-size is 20.0 GB, not 20000.0 MB", () => {
    const tally = (entries: number, bytes: number) => ({ entries, bytes });
    const line = trimLine({
      cache: "triton",
      path: "/runner/triton",
      dryRun: false,
      maxSize: 20e9,
      before: tally(900, 21_400_000_000),
      removed: tally(60, 1_500_000_000),
      after: tally(840, 19_900_000_000),
      spared: { usedByThisJob: 0, otherJobs: 0 },
      skipped: null,
    });
    expect(line).toBe(
      "triton: trimmed /runner/triton from 900 entries (21.4 GB) to 840 (19.9 GB) for max-size 20.0 GB: 60 removed",
    );
  });

  it("kcache trim: --dry-run --json says what would go; without a bound it exits 2 naming the fix", async () => {
    const p = project();
    generateTritonCache(p.cache, { entries: 8, totalBytes: 800_000 });
    const names = entryNames(p.cache);
    const dry = await runCli(["trim", "--max-size", "300KB", "--dry-run", "--json"], {
      env: p.env,
      cwd: p.dir,
    });
    expect(dry.code).toBe(0);
    const [report] = JSON.parse(dry.stdout);
    expect(report).toMatchObject({ cache: "triton", dryRun: true, maxSize: 300_000 });
    expect(report.after.bytes).toBeLessThanOrEqual(300_000);
    expect(entryNames(p.cache)).toEqual(names);
    expect(dry.stderr).toMatch(/would trim .* for max-size 300 kB/);

    const none = await runCli(["trim"], { env: p.env, cwd: p.dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/give --max-size or --older-than, or set max-size/);
    const bad = await runCli(["trim", "--max-size", "lots"], { env: p.env, cwd: p.dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-size lots: use a size like 500MB/);

    const real = await runCli(["trim", "--older-than", "1h"], { env: p.env, cwd: p.dir });
    expect(real.code).toBe(0);
    expect(entryNames(p.cache)).toEqual(names); // all were made just now
  });

  it("a cache with max-size is trimmed at the end of every job, sparing what the job used", async () => {
    const p = project({
      yml: "caches:\n  - name: triton\n    kind: triton\n    path: ${CACHE_ROOT}\n    max-size: 1MB\nstore:\n  path: ${STORE}\n",
    });
    const env = { ...p.env, STORE: p.store };
    generateTritonCache(p.cache, { entries: 30, totalBytes: 3_000_000, seed: 3 });
    age(p.cache, entryNames(p.cache), 48);
    expect((await runCli(["restore"], { env, cwd: p.dir })).code).toBe(0);
    const jobEntries = generateTritonCache(p.cache, {
      entries: 3,
      totalBytes: 300_000,
      seed: 4,
      prefix: "made_by_job",
    }).map((e) => e.name);
    const made = entryNames(p.cache).length;
    const saved = await runCli(["save", "--json"], { env, cwd: p.dir });
    const report = JSON.parse(saved.stdout);
    const trim = report.folders[0].trim;
    expect(trim.after.bytes).toBeLessThanOrEqual(1_000_000);
    expect(diskBytes(p.cache)).toBe(trim.after.bytes);
    expect(made - entryNames(p.cache).length).toBe(trim.removed.entries);
    // The folder held entries before the job and no hook recorded who wrote the three (a fixture, not
    // Triton): the save leaves them out of the key (docs/self-hosted.md, "Jobs at once"), yet they
    // are what the job made, and survive the trim; the old ones it never read went.
    expect(report.leftOut.otherJobs.entries).toBe(3);
    for (const e of jobEntries) expect(entryNames(p.cache)).toContain(e);
    expect(trim.removed.entries).toBeGreaterThan(0);
  });
});
