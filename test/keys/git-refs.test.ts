import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { GitRefs } from "../../src/keys/git-refs.js";
import { currentRevision } from "../../src/keys/revision.js";
import { scopesOf } from "../../src/keys/scope.js";
import { tempDir } from "../helpers/sandbox.js";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@e", ...args], { cwd })
    .toString()
    .trim();

/** A repository with two commits on `trunk`, a clone of it (origin/HEAD set), and a linked worktree. */
function repos() {
  const origin = tempDir("git-origin");
  git(origin, "init", "-q", "-b", "trunk");
  fs.writeFileSync(path.join(origin, "a"), "1");
  git(origin, "add", "a");
  git(origin, "commit", "-qm", "one");
  fs.writeFileSync(path.join(origin, "a"), "2");
  git(origin, "commit", "-qam", "two");
  const clone = path.join(tempDir("git-clone"), "c");
  git(path.dirname(clone), "clone", "-q", origin, clone);
  git(clone, "checkout", "-qb", "feature");
  const wt = path.join(tempDir("git-wt"), "w");
  git(clone, "worktree", "add", "-q", "-b", "other", wt);
  return { origin, clone, wt };
}

describe("git refs read from the repository's files, as git reads them", () => {
  it("agrees with git on HEAD's commit and branch and origin/HEAD, loose, packed, in a worktree, in a subfolder, detached", async () => {
    const { origin, clone, wt } = repos();
    const sub = path.join(clone, "deep", "er");
    fs.mkdirSync(sub, { recursive: true });
    git(clone, "pack-refs", "--all"); // refs/heads/* now only in packed-refs
    for (const dir of [origin, clone, wt, sub]) {
      const refs = GitRefs.at(dir);
      if (!(refs instanceof GitRefs)) throw new Error(`not read at ${dir}`);
      expect(refs.headCommit()).toBe(git(dir, "rev-parse", "HEAD"));
      expect(refs.headBranch()).toBe(git(dir, "rev-parse", "--abbrev-ref", "HEAD"));
    }
    expect((GitRefs.at(clone) as GitRefs).originDefault()).toBe("trunk");
    expect((GitRefs.at(origin) as GitRefs).originDefault()).toBeNull();
    git(clone, "checkout", "-q", "--detach");
    expect((GitRefs.at(clone) as GitRefs).headBranch()).toBeNull();
    expect(currentRevision({}, clone)).toBe(git(clone, "rev-parse", "HEAD"));
    // The scope outside GitHub: the branch and the clone's default branch, with no git process.
    git(clone, "checkout", "-q", "feature");
    const plan = await scopesOf({ PATH: "/nonexistent" }, sub);
    expect(plan).toMatchObject({ write: "branch/feature", defaultBranch: "trunk" });
    expect(currentRevision({ PATH: "/nonexistent" }, wt)).toBe(git(wt, "rev-parse", "HEAD"));
  });

  it("outside any repository: no revision, and no git asked", () => {
    const dir = tempDir("no-repo");
    expect(GitRefs.at(dir) === "none" || GitRefs.at(dir) instanceof GitRefs).toBe(true);
    if (GitRefs.at(dir) === "none") expect(currentRevision({ PATH: "/nonexistent" }, dir)).toBeNull();
  });
});
