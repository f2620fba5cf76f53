import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/load.js";
import { buildJob } from "../../src/job/build-job.js";
import { silentLog } from "../../src/log.js";
import { prewarm } from "../../src/pipeline/prewarm.js";
import { TEST_STACK, tempDir } from "../helpers/sandbox.js";

const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

/** A real git repository with a kernel source and a doc, and a commit helper. */
function repo() {
  const dir = tempDir("prewarm-repo");
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.email=ci@example.com", "-c", "user.name=ci", ...args], { cwd: dir })
      .toString()
      .trim();
  git("init", "-q", "-b", "main");
  fs.mkdirSync(path.join(dir, "src"));
  fs.writeFileSync(path.join(dir, "src", "kernel.py"), "# v1\n");
  fs.writeFileSync(path.join(dir, "README.md"), "docs v1\n");
  git("add", ".");
  git("commit", "-q", "-m", "first");
  const commit = (file: string, text: string) => {
    fs.writeFileSync(path.join(dir, file), text);
    git("commit", "-q", "-am", `change ${file}`);
    return git("rev-parse", "HEAD");
  };
  return { dir, commit };
}

async function run(dir: string, ifChanged?: string[], extraEnv: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    KCACHE_STATE_DIR: path.join(dir, ".state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: "refs/heads/main",
    GITHUB_EVENT_NAME: "schedule",
    ...extraEnv,
  };
  const config = resolveConfig(
    {
      caches: [{ name: "triton", kind: "triton", path: path.join(dir, ".triton") }],
      store: { path: path.join(dir, ".store") },
      key: { prefix: "nightly" },
      profiles: {
        bench: {
          env: { PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "1" },
          commands: [{ name: "workload", run: `python3 ${SIM}/workload.py 2 0` }],
        },
      },
    },
    "kcache.yml",
    env,
    dir,
  );
  const job = await buildJob({
    config,
    overrides: { profile: "bench" },
    log: silentLog(),
    env,
    cwd: dir,
    stack: TEST_STACK,
  });
  return prewarm({ job, outDir: path.join(dir, ".out"), echo: null, ifChanged });
}

describe("kcache prewarm", () => {
  it("runs and saves when the cache is missing, and does nothing when it is present", async () => {
    const r = repo();
    const first = await run(r.dir);
    expect(first).toMatchObject({ outcome: "ran", run: { passed: true, save: { outcome: "saved" } } });
    const again = await run(r.dir);
    expect(again).toMatchObject({ outcome: "present", key: first.key, run: null });
    expect(again.message).toMatch(/is present in branch\/main; nothing to prewarm/);
  });

  it("fills a key whose pack the store evicted again (broken, not present), and the key is whole after", async () => {
    const r = repo();
    const first = await run(r.dir);
    expect(first.outcome).toBe("ran");
    // What GitHub's cache does on its own: a pack evicted, its key's manifest kept.
    const packs = path.join(r.dir, ".store", "packs");
    const pack = fs.readdirSync(packs, { recursive: true, withFileTypes: true }).find((e) => e.isFile());
    if (!pack) throw new Error("no pack saved");
    fs.rmSync(path.join(pack.parentPath, pack.name));
    fs.rmSync(path.join(r.dir, ".triton"), { recursive: true });
    const again = await run(r.dir);
    expect(again).toMatchObject({ outcome: "ran", key: first.key, run: { save: { outcome: "saved" } } });
    expect(await run(r.dir)).toMatchObject({ outcome: "present", key: first.key });
  });

  it("says present on the next prewarm at a revision whose run compiled nothing new (the key was still recorded)", async () => {
    const r = repo();
    const first = await run(r.dir);
    expect(first.outcome).toBe("ran");
    r.commit("README.md", "docs v2\n");
    const docs = await run(r.dir);
    expect(docs).toMatchObject({
      outcome: "ran",
      run: { save: { outcome: "nothing-new", packsWritten: 0 } },
    });
    const third = await run(r.dir);
    expect(third).toMatchObject({ outcome: "present", key: docs.key, run: null });
    // A job at this revision now gets an exact hit (cache-hit true), not a fallback to the parent.
    fs.rmSync(path.join(r.dir, ".triton"), { recursive: true });
    fs.rmSync(path.join(r.dir, ".state"), { recursive: true });
    const fourth = await run(r.dir, undefined, { GITHUB_REF: "refs/heads/main", GITHUB_EVENT_NAME: "push" });
    expect(fourth.outcome).toBe("present");
  });

  it("refuses to run on a pull request's event, saying why, and runs nothing", async () => {
    const r = repo();
    const events: NodeJS.ProcessEnv[] = [
      { GITHUB_EVENT_NAME: "pull_request", GITHUB_REF: "refs/pull/5/merge" },
      { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/feature" },
    ];
    for (const e of events) {
      const pr = await run(r.dir, undefined, e);
      expect(pr).toMatchObject({ outcome: "refused", run: null });
      expect(fs.existsSync(path.join(r.dir, ".store"))).toBe(false);
      expect(fs.existsSync(path.join(r.dir, ".triton"))).toBe(false);
    }
  });

  it("with --if-changed, treats the newest cache as current until a watched file changes", async () => {
    const r = repo();
    const first = await run(r.dir, ["src/**"]);
    expect(first.outcome).toBe("ran");

    r.commit("README.md", "docs v2\n");
    const docsOnly = await run(r.dir, ["src/**"]);
    expect(docsOnly).toMatchObject({ outcome: "current", matchedKey: first.key, run: null });
    expect(docsOnly.message).toMatch(/no file matching src\/\*\* changed since .*\(1 other files did\)/);

    r.commit("src/kernel.py", "# v2\n");
    const kernel = await run(r.dir, ["src/**"]);
    expect(kernel).toMatchObject({ outcome: "ran", matchedKey: first.key, run: { passed: true } });
    expect(kernel.key).not.toBe(first.key);
  });

  it("prewarms when the newest cache's revision is not in the clone (shallow history)", async () => {
    const r = repo();
    await run(r.dir, ["src/**"]);
    // Rewrite history so the cached revision no longer exists.
    execFileSync(
      "git",
      ["-c", "user.email=a@b", "-c", "user.name=n", "commit", "-q", "--amend", "-m", "rewritten"],
      { cwd: r.dir },
    );
    execFileSync("git", ["reflog", "expire", "--expire=now", "--all"], { cwd: r.dir });
    execFileSync("git", ["gc", "-q", "--prune=now"], { cwd: r.dir });
    const after = await run(r.dir, ["src/**"]);
    expect(after.outcome).toBe("ran");
  });
});
