import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { JobContext } from "../../../src/cache/job-context.js";
import { settleFolders } from "../../../src/cache/persistent/settle.js";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { BIN, runCli } from "../../helpers/cli.js";
import { entryNames } from "../../helpers/entry-compare.js";
import { project } from "../../helpers/project.js";
import { runSimWorkload } from "../../helpers/python-sim.js";
import { type Sandbox, sandbox } from "../../helpers/sandbox.js";

const PR_ENV = { GITHUB_REF: "refs/pull/7/merge", GITHUB_EVENT_NAME: "pull_request" };

function isolated(sb: Sandbox, folder: string) {
  return sb.config({
    caches: [{ name: "triton", kind: "triton", path: folder, isolate: true }],
    store: { path: sb.store },
    key: { prefix: "bench" },
  });
}

/** The folder's files with their inodes (kcache's private files left out). */
function inodes(root: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(root, path.join(e.parentPath, e.name));
    if (e.isFile() && !rel.startsWith(".kcache-")) out.set(rel, fs.statSync(path.join(root, rel)).ino);
  }
  return out;
}

/** A runner whose folder a main job filled: restore (miss), compile, save, settle. */
async function warmRunner(sb: Sandbox, folder: string): Promise<string[]> {
  const ctx = await sb.context({ config: isolated(sb, folder), revision: "1".repeat(40) });
  const r = await restore(ctx);
  runSimWorkload(r.caches[0]?.path as string, { plain: 5, autotuned: 1 });
  await save(ctx);
  await settleFolders(ctx, { passed: true });
  return entryNames(folder);
}

async function job(sb: Sandbox, folder: string, env: NodeJS.ProcessEnv, rev: string): Promise<JobContext> {
  return sb.context({
    config: isolated(sb, folder),
    env,
    revision: rev.repeat(40),
    stateDir: path.join(sb.dir, `s-${rev}`),
  });
}

describe("isolate: each job in a folder of its own on a shared runner", () => {
  it("a pull request's job compiles into its own folder, linked from the runner's; its kernels never reach the runner's folder", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const warm = await warmRunner(sb, folder);
    const before = inodes(folder);

    const ctx = await job(sb, folder, PR_ENV, "2");
    const r = await restore(ctx);
    const own = r.caches[0]?.path as string;
    expect(path.dirname(own)).toBe(folder);
    expect(path.basename(own)).toMatch(/^\.kcache-job-/);
    expect(entryNames(own)).toEqual(warm);
    // Files shared by hard links, group files rewritten to name the job's folder.
    for (const e of warm) {
      for (const f of fs.readdirSync(path.join(own, e))) {
        const mine = fs.statSync(path.join(own, e, f)).ino;
        const theirs = before.get(`${e}/${f}`);
        if (f.startsWith("__grp__")) {
          expect(mine).not.toBe(theirs);
          for (const p of Object.values(
            JSON.parse(fs.readFileSync(path.join(own, e, f), "utf8")).child_paths,
          ))
            expect(String(p).startsWith(`${own}/`)).toBe(true);
        } else expect(mine).toBe(theirs);
      }
    }

    const run = runSimWorkload(own, { plain: 5, autotuned: 1, prefix: "planted" });
    const again = runSimWorkload(own, { plain: 5, autotuned: 1 });
    expect(again.written).toEqual([]); // the runner's kernels load in the job's folder
    expect((await save(ctx)).scope).toBe("pr/7");
    const settled = await settleFolders(ctx, { passed: true });
    expect(settled[0]?.discarded).toMatch(/not the default branch's/);
    expect(fs.existsSync(own)).toBe(false);
    expect(inodes(folder)).toEqual(before);
    for (const planted of run.written) expect(entryNames(folder)).not.toContain(planted);
    // What stays is the record that an untrusted job was here, and when it ended (live-jobs.ts).
    const left = fs.readdirSync(folder).filter((n) => n.startsWith(".kcache-") && n !== ".kcache-use.json");
    expect(left).toHaveLength(1);
    expect(JSON.parse(fs.readFileSync(path.join(folder, left[0] as string), "utf8"))).toMatchObject({
      trusted: false,
      endedAt: expect.any(Number),
    });
  });

  it("a default-branch job that passed merges what it compiled, whole and relocated; one that failed is discarded", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const warm = await warmRunner(sb, folder);

    const failed = await job(sb, folder, {}, "3");
    const own = (await restore(failed)).caches[0]?.path as string;
    const lost = runSimWorkload(own, { plain: 2, autotuned: 0, prefix: "failed" });
    expect((await settleFolders(failed, { passed: false }))[0]?.discarded).toBe("the job did not pass");
    for (const e of lost.written) expect(entryNames(folder)).not.toContain(e);

    const ctx = await job(sb, folder, {}, "4");
    const mine = (await restore(ctx)).caches[0]?.path as string;
    const run = runSimWorkload(mine, { plain: 3, autotuned: 1, prefix: "new" });
    await save(ctx);
    const [settled] = await settleFolders(ctx, { passed: true });
    expect(settled?.merged).toMatchObject({ merged: run.written.length, failed: 0 });
    expect(settled?.merged?.same).toBe(warm.length);
    expect(entryNames(folder)).toEqual([...warm, ...run.written].sort());
    for (const e of run.written)
      for (const f of fs.readdirSync(path.join(folder, e)).filter((n) => n.startsWith("__grp__")))
        for (const p of Object.values(
          JSON.parse(fs.readFileSync(path.join(folder, e, f), "utf8")).child_paths,
        ))
          expect(String(p).startsWith(`${folder}/${e}/`)).toBe(true);
    expect(runSimWorkload(folder, { plain: 3, autotuned: 1, prefix: "new" }).written).toEqual([]);
    expect(fs.readdirSync(folder).filter((n) => /^\.kcache-(job|live|restore|trash)-/.test(n))).toEqual([]);
  });

  it("a job killed with kill -9 leaves only its own folder, which the next restore removes", async () => {
    const p = project({
      yml: 'caches:\n  - { name: triton, kind: triton, path: "${CACHE_ROOT}", isolate: true }\nstore:\n  path: ${STORE}\n',
    });
    const env = { ...p.env, STORE: p.store };
    runSimWorkload(p.cache, { plain: 2, autotuned: 0 });
    // The job: a shell that restores, then "compiles" until it is killed with everything it started.
    const shell = spawn("sh", ["-c", `"${process.execPath}" "${BIN}" restore && sleep 60`], {
      env,
      cwd: p.dir,
      detached: true,
      stdio: "ignore",
    });
    const jobFolders = () => fs.readdirSync(p.cache).filter((n) => n.startsWith(".kcache-job-"));
    for (let i = 0; i < 200 && jobFolders().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(jobFolders()).toHaveLength(1);
    process.kill(-(shell.pid as number), "SIGKILL");
    await new Promise((r) => shell.on("close", r));

    const next = await runCli(["restore"], {
      env: { ...env, KCACHE_STATE_DIR: path.join(p.dir, "s2") },
      cwd: p.dir,
    });
    expect(next.code).toBe(0);
    // Only the next job's own folder, whose process (this test) is still running.
    expect(jobFolders()).toHaveLength(1);
    expect(next.stderr).toMatch(/this job works in .*\.kcache-job-/);
  });

  it("under GitHub Actions, kcache restore points later steps at the job's folder through $GITHUB_ENV, and save finds it there", async () => {
    const p = project({
      yml: 'caches:\n  - { name: triton, kind: triton, path: "${TRITON_CACHE_DIR}", isolate: true }\nstore:\n  path: ${STORE}\n',
    });
    const githubEnv = path.join(p.dir, "github-env");
    fs.writeFileSync(githubEnv, "");
    const env = { ...p.env, STORE: p.store, TRITON_CACHE_DIR: p.cache, GITHUB_ENV: githubEnv };
    fs.mkdirSync(p.cache, { recursive: true });
    expect((await runCli(["restore"], { env, cwd: p.dir })).code).toBe(0);
    const line = fs.readFileSync(githubEnv, "utf8").trim();
    expect(line).toMatch(/^TRITON_CACHE_DIR=.*\/\.kcache-job-[^/]+$/);
    const own = line.slice("TRITON_CACHE_DIR=".length);
    const run = runSimWorkload(own, { plain: 2, autotuned: 0 });
    // The next step runs with the variable the restore exported, as the runner does.
    const saved = await runCli(["save", "--json"], { env: { ...env, TRITON_CACHE_DIR: own }, cwd: p.dir });
    expect(JSON.parse(saved.stdout)).toMatchObject({ outcome: "saved", entriesNew: run.written.length });
    expect(fs.existsSync(own)).toBe(false);
    expect(entryNames(p.cache)).toEqual([...run.written].sort());
  });

  it("kcache run runs the commands against the job's folder and merges it after they passed", async () => {
    const p = project({
      yml: [
        'caches:\n  - { name: triton, kind: triton, path: "${CACHE_ROOT}", isolate: true }',
        "store:\n  path: ${STORE}",
        "profiles:\n  bench:\n    commands:",
        `      - { name: bench, run: 'echo "$TRITON_CACHE_DIR" > seen.txt && python3 ${path.resolve("demo/sim/workload.py")} 2 0' }`,
      ].join("\n"),
    });
    const env = {
      ...p.env,
      STORE: p.store,
      PYTHONPATH: `${path.resolve("demo/sim")}:${p.env.PYTHONPATH}`,
      TRITON_SIM_COMPILE_MS: "1",
    };
    const r = await runCli(["run", "--profile", "bench", "--json"], { env, cwd: p.dir });
    expect(r.code).toBe(0);
    const seen = fs.readFileSync(path.join(p.dir, "seen.txt"), "utf8").trim();
    expect(path.dirname(seen)).toBe(p.cache);
    expect(path.basename(seen)).toMatch(/^\.kcache-job-/);
    const report = JSON.parse(r.stdout);
    expect(report.folders[0]).toMatchObject({ jobFolder: seen, discarded: null });
    expect(report.folders[0].merged.merged).toBe(entryNames(p.cache).length);
    expect(fs.existsSync(seen)).toBe(false);
  });

  it("shares by hard link only what every writer replaces by rename: a dir cache's files are copied", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "pip");
    fs.mkdirSync(path.join(folder, "wheels"), { recursive: true });
    fs.writeFileSync(path.join(folder, "wheels", "a.whl"), "wheel bytes");
    const config = sb.config({
      caches: [{ name: "pip", kind: "dir", path: folder, isolate: true }],
      store: { path: sb.store },
    });
    const r = await restore(await sb.context({ config }));
    const own = r.caches[0]?.path as string;
    const copy = path.join(own, "wheels", "a.whl");
    expect(fs.readFileSync(copy, "utf8")).toBe("wheel bytes");
    expect(fs.statSync(copy).ino).not.toBe(fs.statSync(path.join(folder, "wheels", "a.whl")).ino);
    fs.writeFileSync(copy, "edited in place by the job");
    expect(fs.readFileSync(path.join(folder, "wheels", "a.whl"), "utf8")).toBe("wheel bytes");
  });
});
