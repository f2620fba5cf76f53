import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { restoreOrder } from "../../src/keys/key.js";
import { scopesOf } from "../../src/keys/scope.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { sandbox, tempDir } from "../helpers/sandbox.js";

const PR_ENV = {
  GITHUB_ACTIONS: "true",
  GITHUB_EVENT_NAME: "pull_request",
  GITHUB_REF: "refs/pull/42/merge",
  GITHUB_BASE_REF: "release",
  GITHUB_HEAD_REF: "feature",
};

describe("scopes", () => {
  it("outside GitHub, takes the default branch from the clone's origin/HEAD (a repository whose default is master)", async () => {
    const repo = tempDir("master-repo");
    const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "pipe" });
    git("init", "-q", "-b", "feature");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x");
    git("update-ref", "refs/remotes/origin/master", "HEAD");
    git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/master");
    expect(await scopesOf({}, repo)).toMatchObject({
      write: "branch/feature",
      read: ["branch/feature", "branch/master"],
      defaultBranch: "master",
    });
    // kcache.yml's key.default-branch still wins, and a clone without origin/HEAD falls back to main.
    expect((await scopesOf({}, repo, { configuredDefault: "trunk" })).defaultBranch).toBe("trunk");
    expect((await scopesOf({}, tempDir("no-git"))).defaultBranch).toBe("main");
  });

  it("puts a pull request in its own scope, reading its base and then the default branch", async () => {
    expect(await scopesOf(PR_ENV, "/", { configuredDefault: "main" })).toMatchObject({
      write: "pr/42",
      read: ["pr/42", "branch/release", "branch/main"],
      defaultBranch: "main",
    });
    expect(
      await scopesOf(
        { GITHUB_ACTIONS: "true", GITHUB_REF: "refs/heads/main", GITHUB_EVENT_NAME: "push" },
        "/",
        { configuredDefault: "main" },
      ),
    ).toMatchObject({
      write: "branch/main",
      read: ["branch/main"],
      defaultBranch: "main",
    });
    expect(
      (
        await scopesOf(
          { GITHUB_ACTIONS: "true", GITHUB_REF: "refs/heads/dev", GITHUB_EVENT_NAME: "schedule" },
          "/",
          { configuredDefault: "main" },
        )
      ).read,
    ).toEqual(["branch/dev", "branch/main"]);
  });

  it("never lets the default branch restore what a pull request saved", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 6, totalBytes: 200_000 });
    const prSave = await save(await sb.context({ env: PR_ENV, revision: "a".repeat(40) }));
    expect(prSave).toMatchObject({ outcome: "saved", scope: "pr/42" });

    const mainRestore = await restore(
      await sb.context({
        env: { GITHUB_REF: "refs/heads/main", GITHUB_EVENT_NAME: "push" },
        revision: "a".repeat(40),
        stateDir: path.join(sb.dir, "s-main"),
      }),
    );
    expect(mainRestore.matchedKey).toBeNull();

    // The same PR's next run finds it.
    const prAgain = await restore(
      await sb.context({ env: PR_ENV, revision: "b".repeat(40), stateDir: path.join(sb.dir, "s-pr") }),
    );
    expect(prAgain).toMatchObject({ matchedKey: prSave.primaryKey, matchedScope: "pr/42", cacheHit: false });
  });

  it("lets a pull request restore and extend the default branch's cache without touching it", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    generateTritonCache(root, { entries: 6, totalBytes: 200_000 });
    const mainSave = await save(await sb.context({ revision: "c".repeat(40) }));
    const pr = await sb.context({
      env: PR_ENV,
      revision: "d".repeat(40),
      stateDir: path.join(sb.dir, "s-pr"),
    });
    const r = await restore(pr);
    expect(r).toMatchObject({ matchedKey: mainSave.primaryKey, matchedScope: "branch/main" });
    generateTritonCache(root, { entries: 3, totalBytes: 50_000, seed: 5, prefix: "pr_kernel" });
    const s = await save(pr);
    expect(s).toMatchObject({ outcome: "saved", scope: "pr/42", entriesReused: 6, entriesNew: 3 });
    const mainAgain = await restore(
      await sb.context({ revision: "e".repeat(40), stateDir: path.join(sb.dir, "s-main2") }),
    );
    expect(mainAgain.matchedKey).toBe(mainSave.primaryKey);
    // The runner kept its folder: main's 6 entries are there as the key has them (nothing to
    // download), and the pull request's 3 stay for the job as local, unverified entries.
    expect(mainAgain).toMatchObject({ entriesPresent: 6, entriesRestored: 0, entriesLocal: 3 });
  });
});

describe("restore order", () => {
  it("is exact key, stack prefix, then restore prefixes, in each scope in turn", () => {
    const steps = restoreOrder("w-abc-123", "w-abc-", ["w-"], ["pr/1", "branch/main"]);
    expect(steps.map((s) => `${s.scope} ${s.match} ${s.value}`)).toEqual([
      "pr/1 exact w-abc-123",
      "pr/1 prefix w-abc-",
      "pr/1 prefix w-",
      "branch/main exact w-abc-123",
      "branch/main prefix w-abc-",
      "branch/main prefix w-",
    ]);
  });

  it("restores the newest key of the same stack, and another stack only through a restore prefix", async () => {
    const sb = sandbox();
    const root = path.join(sb.dir, "triton");
    generateTritonCache(root, { entries: 4, totalBytes: 100_000 });
    const older = await save(await sb.context({ revision: "1".repeat(40) }));
    // Order by explicit timestamps, not by sleeping: the first key was written a minute earlier.
    const olderFile = path.join(sb.store, "manifests", "branch%2Fmain", encodeURIComponent(older.primaryKey));
    const minuteAgo = new Date(Date.now() - 60_000);
    fs.utimesSync(olderFile, minuteAgo, minuteAgo);
    generateTritonCache(root, { entries: 4, totalBytes: 100_000, seed: 2, prefix: "later" });
    const newer = await save(await sb.context({ revision: "2".repeat(40) }));

    const r = await restore(await sb.context({ revision: "9".repeat(40), stateDir: path.join(sb.dir, "x") }));
    expect(r).toMatchObject({ matchedKey: newer.primaryKey, cacheHit: false, entriesPresent: 8 });

    // Another stack (say, a new Triton) finds nothing unless a restore prefix spans stacks.
    const other = { ...(await sb.context()).stack, stackId: "0123456789ab" };
    const ctx = await sb.context({ revision: "9".repeat(40), stateDir: path.join(sb.dir, "y") });
    const miss = await restore({
      ...ctx,
      stack: other,
      key: `bench-${other.stackId}-${"9".repeat(40)}`,
      stackKeyPrefix: `bench-${other.stackId}-`,
    });
    expect(miss.matchedKey).toBeNull();
    const cfg = sb.config({
      caches: [{ name: "triton", kind: "triton", path: path.join(sb.dir, "z") }],
      store: { path: sb.store },
      key: { prefix: "bench", "restore-prefixes": ["bench-"] },
    });
    const ctx2 = await sb.context({
      config: cfg,
      revision: "9".repeat(40),
      stateDir: path.join(sb.dir, "z-state"),
    });
    const hit = await restore({
      ...ctx2,
      key: `bench-${other.stackId}-${"9".repeat(40)}`,
      stackKeyPrefix: `bench-${other.stackId}-`,
    });
    expect(hit.matchedKey).toBe(newer.primaryKey);
  });
});
