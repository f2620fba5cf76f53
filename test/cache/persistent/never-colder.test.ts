import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { settleFolders } from "../../../src/cache/persistent/settle.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { telemetryEnv } from "../../../src/telemetry/hook.js";
import { readTelemetry } from "../../../src/telemetry/read.js";
import { entryNames } from "../../helpers/entry-compare.js";
import { runSimWorkload } from "../../helpers/python-sim.js";
import { sandbox } from "../../helpers/sandbox.js";

/** Every file of a folder's entries with its inode: what a recompile or a move would change. */
function inodes(root: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(root, path.join(e.parentPath, e.name));
    if (e.isFile() && !rel.startsWith(".kcache-")) out.set(rel, fs.statSync(path.join(root, rel)).ino);
  }
  return out;
}

describe("a runner that keeps its cache folder: never colder than it was", () => {
  it("a restore that misses keeps every entry where it is; the job compiles none of them; the save uploads only what the job made", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    // Earlier jobs on this runner, before kcache (or with a store that has no key yet).
    runSimWorkload(folder, { plain: 6, autotuned: 2 });
    const warm = entryNames(folder);
    expect(warm.length).toBeGreaterThan(10);
    const before = inodes(folder);

    const r = await restore(await sb.context());
    expect(r).toMatchObject({
      matchedKey: null,
      entriesBefore: warm.length,
      entriesLocal: warm.length,
      entriesRestored: 0,
    });
    expect(inodes(folder)).toEqual(before); // nothing moved, deleted or rewritten

    const job = runSimWorkload(folder, { plain: 6, autotuned: 2 });
    expect(job.compiled).toBe(0);
    expect(job.written).toEqual([]);
    expect(job.loaded).toBeGreaterThan(0);

    // Nothing vouches for what was there: nothing is uploaded for it.
    const nothing = await save(await sb.context());
    expect(nothing.outcome).toBe("empty");
    expect(nothing.message).toMatch(/nothing this job can vouch for/);
    expect(nothing.leftOut.unverified.entries).toBe(warm.length);
  });

  it("a job that compiles something new saves only that, and the warm entries stay out of the key", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    runSimWorkload(folder, { plain: 4, autotuned: 1 });
    const warm = entryNames(folder);
    await restore(await sb.context());
    // Under kcache's hook (kcache run, the action): on a folder other jobs may write, what the job's
    // own processes wrote is all a save can call its own (docs/self-hosted.md, "Jobs at once").
    const telemetry = path.join(sb.dir, "telemetry.jsonl");
    const job = runSimWorkload(folder, {
      plain: 3,
      autotuned: 0,
      prefix: "new",
      env: telemetryEnv({}, telemetry),
    });
    expect(job.compiled).toBeGreaterThan(0);
    const t = readTelemetry(telemetry);
    const hook = { complete: t.usageComplete, dirs: t.usedFolders, written: t.wroteFiles };
    const s = await save(await sb.context(), { hook });
    expect(s).toMatchObject({ outcome: "saved", entriesNew: job.written.length });
    expect(s.leftOut.unverified.entries).toBe(warm.length);

    // A fresh runner restoring that key gets exactly the job's entries.
    const fresh = path.join(sb.dir, "fresh");
    const other = await sb.context({
      stateDir: path.join(sb.dir, "s-fresh"),
      config: sb.config({
        caches: [{ name: "triton", kind: "triton", path: fresh }],
        store: { path: sb.store },
        key: { prefix: "bench" },
      }),
    });
    await restore(other);
    expect(entryNames(fresh)).toEqual([...job.written].sort());
  });

  it("trust-local uploads what the folder held before the job (a runner that only runs the default branch)", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    runSimWorkload(folder, { plain: 4, autotuned: 1 });
    const warm = entryNames(folder);
    const config = sb.config({
      caches: [{ name: "triton", kind: "triton", path: folder, "trust-local": true }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    });
    await restore(await sb.context({ config }));
    const s = await save(await sb.context({ config }));
    expect(s).toMatchObject({ outcome: "saved", entriesNew: warm.length });
    expect(s.leftOut.unverified.entries).toBe(0);
  });

  it("a hit writes only the key's entries that are absent or differ, keeps the rest, and says so", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    await restore(await sb.context({ revision: "1".repeat(40) }));
    runSimWorkload(folder, { plain: 5, autotuned: 1 });
    const keyEntries = entryNames(folder);
    expect((await save(await sb.context({ revision: "1".repeat(40) }))).entriesNew).toBe(keyEntries.length);

    // Later on the runner: one of the key's entries was removed, one was altered, and a job of
    // another workload left entries of its own.
    const [gone, altered] = keyEntries as [string, string];
    fs.rmSync(path.join(folder, gone), { recursive: true });
    const metadata = fs.readdirSync(path.join(folder, altered)).find((f) => !f.startsWith("__grp__"));
    fs.appendFileSync(path.join(folder, altered, metadata as string), "\n// edited on the runner\n");
    runSimWorkload(folder, { plain: 2, autotuned: 0, prefix: "other" });
    const local = entryNames(folder).filter((n) => !keyEntries.includes(n));
    const kept = inodes(folder);

    const ctx = await sb.context({ revision: "2".repeat(40), stateDir: path.join(sb.dir, "s2") });
    const r = await restore(ctx);
    expect(r).toMatchObject({
      entriesBefore: keyEntries.length - 1 + local.length,
      entriesPresent: keyEntries.length - 2,
      entriesRestored: 2,
      entriesReplaced: 1,
      entriesLocal: local.length,
    });
    expect(entryNames(folder)).toEqual([...keyEntries, ...local].sort());
    // Only the altered entry's files changed; every other file is the one that was there.
    for (const [rel, ino] of kept)
      if (!rel.startsWith(`${altered}/`)) expect(inodes(folder).get(rel)).toBe(ino);
    expect(ctx.log.warnings).toEqual([]);
  });

  it("a save with no restore before it warns on a folder an earlier job ended in, and only there", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    runSimWorkload(folder, { plain: 2, autotuned: 0 });
    const plain = await sb.context({ stateDir: path.join(sb.dir, "s-plain") });
    await save(plain); // an ephemeral runner's first save: nothing to warn about
    expect(plain.log.warnings).toEqual([]);
    const job = await sb.context({ revision: "2".repeat(40), stateDir: path.join(sb.dir, "s-job") });
    await restore(job);
    await save(job);
    await settleFolders(job, { passed: true }); // the job ends: the folder is a kept one now
    const bare = await sb.context({ revision: "3".repeat(40), stateDir: path.join(sb.dir, "s-bare") });
    runSimWorkload(folder, { plain: 1, autotuned: 0, prefix: "late" });
    await save(bare);
    expect(bare.log.warnings.join("\n")).toMatch(/no restore ran before this save in this job/);
  });

  it("brings back what kcache 0.1 moved aside, as local entries", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    runSimWorkload(folder, { plain: 3, autotuned: 0 });
    const names = entryNames(folder);
    const aside = path.join(folder, ".kcache-aside");
    fs.mkdirSync(aside);
    for (const n of names) fs.renameSync(path.join(folder, n), path.join(aside, n));
    const r = await restore(await sb.context());
    expect(r).toMatchObject({ entriesBefore: names.length, entriesLocal: names.length });
    expect(entryNames(folder)).toEqual(names);
    expect(fs.existsSync(aside)).toBe(false);
    expect(runSimWorkload(folder, { plain: 3, autotuned: 0 }).compiled).toBe(0);
  });
});
