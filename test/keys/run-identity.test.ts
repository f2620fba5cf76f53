import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runIdentity } from "../../src/keys/run-identity.js";
import { isTrustedScope, ScopeRefusal, scopePlan, scopesOf } from "../../src/keys/scope.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * Real variable sets, as each system's documentation says its builds set them: GitLab's predefined
 * variables, Buildkite's environment variables, Jenkins' multibranch variables, and env-ci's for the
 * others. `trusted` is what the build is: a branch's or tag's own code (true) or anything a pull
 * request, a fork or an unknown party may have written (false).
 */
const SHA = "0123456789abcdef0123456789abcdef01234567";
const gitlab = (vars: Record<string, string>) => ({
  CI: "true",
  GITLAB_CI: "true",
  CI_PROJECT_ID: "10",
  CI_DEFAULT_BRANCH: "main",
  CI_COMMIT_SHA: SHA,
  CI_PIPELINE_ID: "9001",
  ...vars,
});
const buildkite = (vars: Record<string, string>) => ({
  CI: "true",
  BUILDKITE: "true",
  BUILDKITE_REPO: "git@github.com:org/kernels.git",
  BUILDKITE_PIPELINE_DEFAULT_BRANCH: "main",
  BUILDKITE_COMMIT: SHA,
  BUILDKITE_BUILD_ID: "0190-abcd",
  BUILDKITE_PULL_REQUEST: "false",
  BUILDKITE_PULL_REQUEST_REPO: "",
  BUILDKITE_PULL_REQUEST_BASE_BRANCH: "",
  BUILDKITE_TAG: "",
  BUILDKITE_SOURCE: "webhook",
  ...vars,
});
const jenkins = (vars: Record<string, string>) => ({
  JENKINS_URL: "https://ci.example.org/",
  JENKINS_HOME: "/var/jenkins_home",
  BUILD_NUMBER: "17",
  BUILD_TAG: "jenkins-kernels-main-17",
  GIT_COMMIT: SHA,
  ...vars,
});
const github = (vars: Record<string, string>) => ({
  CI: "true",
  GITHUB_ACTIONS: "true",
  GITHUB_SHA: SHA,
  GITHUB_RUN_ID: "555",
  ...vars,
});

type Row = [name: string, env: Record<string, string>, write: string, trusted: boolean];

const ROWS: Row[] = [
  // GitHub Actions (GITHUB_REF and the event name; payloads are covered in scope-events.test.ts)
  [
    "GitHub: push to main",
    github({ GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" }),
    "branch/main",
    true,
  ],
  [
    "GitHub: schedule",
    github({ GITHUB_EVENT_NAME: "schedule", GITHUB_REF: "refs/heads/main" }),
    "branch/main",
    true,
  ],
  [
    "GitHub: manual run on a branch",
    github({ GITHUB_EVENT_NAME: "workflow_dispatch", GITHUB_REF: "refs/heads/dev" }),
    "branch/dev",
    true,
  ],
  ["GitHub: tag push", github({ GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/tags/v1.2" }), "tag/v1.2", true],
  [
    "GitHub: pull request",
    github({ GITHUB_EVENT_NAME: "pull_request", GITHUB_REF: "refs/pull/8/merge", GITHUB_BASE_REF: "main" }),
    "pr/8",
    false,
  ],
  [
    "GitHub: pull_request_target (ref is the base branch)",
    github({ GITHUB_EVENT_NAME: "pull_request_target", GITHUB_REF: "refs/heads/main" }),
    "untrusted/pull_request_target-555",
    false,
  ],
  [
    "GitHub: merge queue",
    github({ GITHUB_EVENT_NAME: "merge_group", GITHUB_REF: "refs/heads/gh-readonly-queue/main/pr-8-abc" }),
    "branch/gh-readonly-queue/main/pr-8-abc",
    true,
  ],
  [
    "GitHub: an event kcache does not know",
    github({ GITHUB_EVENT_NAME: "future_event", GITHUB_REF: "refs/heads/main" }),
    "untrusted/future_event-555",
    false,
  ],

  // GitLab CI
  [
    "GitLab: push to main",
    gitlab({ CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
    "branch/main",
    true,
  ],
  [
    "GitLab: push to a feature branch",
    gitlab({ CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "feature", CI_COMMIT_REF_NAME: "feature" }),
    "branch/feature",
    true,
  ],
  [
    "GitLab: tag pipeline",
    gitlab({ CI_PIPELINE_SOURCE: "push", CI_COMMIT_TAG: "v2.0", CI_COMMIT_REF_NAME: "v2.0" }),
    "tag/v2.0",
    true,
  ],
  [
    "GitLab: scheduled pipeline on main",
    gitlab({ CI_PIPELINE_SOURCE: "schedule", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
    "branch/main",
    true,
  ],
  [
    "GitLab: manual (web) pipeline on main",
    gitlab({ CI_PIPELINE_SOURCE: "web", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
    "branch/main",
    true,
  ],
  [
    "GitLab: API-triggered pipeline on main",
    gitlab({ CI_PIPELINE_SOURCE: "api", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
    "branch/main",
    true,
  ],
  [
    "GitLab: merge request from the same project",
    gitlab({
      CI_PIPELINE_SOURCE: "merge_request_event",
      CI_MERGE_REQUEST_IID: "5",
      CI_MERGE_REQUEST_ID: "77001",
      CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "10",
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
      CI_COMMIT_REF_NAME: "feature",
    }),
    "pr/5",
    false,
  ],
  [
    "GitLab: merge request from a fork",
    gitlab({
      CI_PIPELINE_SOURCE: "merge_request_event",
      CI_MERGE_REQUEST_IID: "6",
      CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "99",
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
      CI_COMMIT_REF_NAME: "main",
    }),
    "pr/6",
    false,
  ],
  [
    "GitLab: merged results pipeline",
    gitlab({
      CI_PIPELINE_SOURCE: "merge_request_event",
      CI_MERGE_REQUEST_EVENT_TYPE: "merged_result",
      CI_MERGE_REQUEST_IID: "7",
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
    }),
    "pr/7",
    false,
  ],
  [
    "GitLab: merge train",
    gitlab({
      CI_PIPELINE_SOURCE: "merge_request_event",
      CI_MERGE_REQUEST_EVENT_TYPE: "merge_train",
      CI_MERGE_REQUEST_IID: "8",
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
    }),
    "pr/8",
    false,
  ],
  [
    "GitLab: the issue's MR IID with CI_COMMIT_REF_NAME=main",
    gitlab({ CI_MERGE_REQUEST_IID: "5", CI_COMMIT_REF_NAME: "main" }),
    "pr/5",
    false,
  ],
  [
    "GitLab: external pull request (GitHub repository)",
    gitlab({
      CI_PIPELINE_SOURCE: "external_pull_request_event",
      CI_EXTERNAL_PULL_REQUEST_IID: "31",
      CI_COMMIT_BRANCH: "feature",
    }),
    "pr/31",
    false,
  ],
  [
    "GitLab: merge request event without an IID",
    gitlab({ CI_PIPELINE_SOURCE: "merge_request_event", CI_COMMIT_REF_NAME: "main" }),
    "untrusted/gitlab-ci-9001",
    false,
  ],
  [
    "GitLab: child pipeline of a merge request (no CI_COMMIT_BRANCH)",
    gitlab({ CI_PIPELINE_SOURCE: "parent_pipeline", CI_COMMIT_REF_NAME: "feature" }),
    "untrusted/gitlab-ci-9001",
    false,
  ],
  [
    "GitLab: a pipeline source kcache does not know",
    gitlab({
      CI_PIPELINE_SOURCE: "security_orchestration_policy",
      CI_COMMIT_BRANCH: "main",
      CI_COMMIT_REF_NAME: "main",
    }),
    "untrusted/gitlab-ci-9001",
    false,
  ],
  [
    "GitLab: no pipeline source at all",
    gitlab({ CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
    "untrusted/gitlab-ci-9001",
    false,
  ],
  [
    "GitLab: branch and ref name disagree",
    gitlab({ CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "feature" }),
    "untrusted/gitlab-ci-9001",
    false,
  ],

  // Buildkite
  ["Buildkite: push to main", buildkite({ BUILDKITE_BRANCH: "main" }), "branch/main", true],
  ["Buildkite: push to a feature branch", buildkite({ BUILDKITE_BRANCH: "feature" }), "branch/feature", true],
  ["Buildkite: tag build", buildkite({ BUILDKITE_BRANCH: "v3.1", BUILDKITE_TAG: "v3.1" }), "tag/v3.1", true],
  [
    "Buildkite: scheduled build on main",
    buildkite({ BUILDKITE_BRANCH: "main", BUILDKITE_SOURCE: "schedule" }),
    "branch/main",
    true,
  ],
  [
    "Buildkite: pull request from the same repository",
    buildkite({
      BUILDKITE_PULL_REQUEST: "42",
      BUILDKITE_PULL_REQUEST_REPO: "https://github.com/org/kernels.git",
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main",
      BUILDKITE_BRANCH: "feature",
    }),
    "pr/42",
    false,
  ],
  [
    "Buildkite: pull request from a fork",
    buildkite({
      BUILDKITE_PULL_REQUEST: "43",
      BUILDKITE_PULL_REQUEST_REPO: "https://github.com/someone/kernels.git",
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main",
      BUILDKITE_BRANCH: "someone:feature",
    }),
    "pr/43",
    false,
  ],
  [
    "Buildkite: a fork's pull request from its branch named main",
    buildkite({
      BUILDKITE_PULL_REQUEST: "44",
      BUILDKITE_PULL_REQUEST_REPO: "git://github.com/someone/kernels.git",
      BUILDKITE_BRANCH: "main",
    }),
    "pr/44",
    false,
  ],
  [
    "Buildkite: the issue's PR 42 on branch feature",
    buildkite({ BUILDKITE_PULL_REQUEST: "42", BUILDKITE_BRANCH: "feature" }),
    "pr/42",
    false,
  ],
  [
    "Buildkite: BUILDKITE_PULL_REQUEST unset",
    { CI: "true", BUILDKITE: "true", BUILDKITE_BRANCH: "main", BUILDKITE_BUILD_ID: "b1" },
    "untrusted/buildkite-b1",
    false,
  ],
  [
    "Buildkite: not a pull request, yet a pull request's repository",
    buildkite({
      BUILDKITE_BRANCH: "main",
      BUILDKITE_PULL_REQUEST_REPO: "https://github.com/someone/kernels.git",
    }),
    "untrusted/buildkite-0190-abcd",
    false,
  ],

  // Jenkins
  [
    "Jenkins multibranch: main",
    jenkins({ BRANCH_NAME: "main", BRANCH_IS_PRIMARY: "true" }),
    "branch/main",
    true,
  ],
  ["Jenkins multibranch: a feature branch", jenkins({ BRANCH_NAME: "feature" }), "branch/feature", true],
  ["Jenkins multibranch: tag", jenkins({ BRANCH_NAME: "v1.0", TAG_NAME: "v1.0" }), "tag/v1.0", true],
  [
    "Jenkins multibranch: change request from the same repository",
    jenkins({ BRANCH_NAME: "PR-12", CHANGE_ID: "12", CHANGE_TARGET: "main", CHANGE_BRANCH: "feature" }),
    "pr/12",
    false,
  ],
  [
    "Jenkins multibranch: change request from a fork",
    jenkins({
      BRANCH_NAME: "PR-13",
      CHANGE_ID: "13",
      CHANGE_TARGET: "main",
      CHANGE_BRANCH: "main",
      CHANGE_FORK: "someone",
    }),
    "pr/13",
    false,
  ],
  [
    "Jenkins: GitHub pull request builder",
    jenkins({ ghprbPullId: "77", ghprbTargetBranch: "main", GIT_BRANCH: "origin/pr/77/merge" }),
    "pr/77",
    false,
  ],
  [
    "Jenkins: freestyle job on origin/main",
    jenkins({ GIT_BRANCH: "origin/main" }),
    "untrusted/jenkins-jenkins-kernels-main-17",
    false,
  ],
  [
    "Jenkins: PR-12 without CHANGE_ID",
    jenkins({ BRANCH_NAME: "PR-12" }),
    "untrusted/jenkins-jenkins-kernels-main-17",
    false,
  ],
  [
    "Jenkins: CHANGE_FORK without CHANGE_ID",
    jenkins({ BRANCH_NAME: "main", CHANGE_FORK: "someone" }),
    "untrusted/jenkins-jenkins-kernels-main-17",
    false,
  ],

  // Other CIs (env-ci) and none
  [
    "CircleCI: a branch build (not a CI kcache trusts)",
    { CI: "true", CIRCLECI: "true", CIRCLE_BRANCH: "main", CIRCLE_SHA1: SHA, CIRCLE_BUILD_NUM: "5" },
    "untrusted/circleci-5",
    false,
  ],
  [
    "CircleCI: a pull request",
    {
      CI: "true",
      CIRCLECI: "true",
      CIRCLE_BRANCH: "feature",
      CIRCLE_PULL_REQUEST: "https://github.com/org/kernels/pull/5",
      CIRCLE_BUILD_NUM: "6",
    },
    "pr/5",
    false,
  ],
  [
    "Travis: a pull request",
    { CI: "true", TRAVIS: "true", TRAVIS_PULL_REQUEST: "9", TRAVIS_BRANCH: "main", TRAVIS_JOB_NUMBER: "1.1" },
    "pr/9",
    false,
  ],
  ["an unknown CI (CI=true only)", { CI: "true", BUILD_NUMBER: "3" }, "untrusted/ci-3", false],
  [
    "GitHub's push to main beside a GitLab fork merge request",
    {
      ...github({ GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" }),
      ...gitlab({
        CI_PIPELINE_SOURCE: "merge_request_event",
        CI_MERGE_REQUEST_IID: "6",
        CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "99",
      }),
    },
    "untrusted/unknown-9001",
    false,
  ],
  [
    "Jenkins multibranch: main with CHANGE_URL and no CHANGE_ID",
    jenkins({ BRANCH_NAME: "main", BRANCH_IS_PRIMARY: "true", CHANGE_URL: "https://example.org/pr/12" }),
    "untrusted/jenkins-jenkins-kernels-main-17",
    false,
  ],
  [
    "GitLab and Buildkite variables at once",
    {
      ...gitlab({ CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "main" }),
      ...buildkite({ BUILDKITE_BRANCH: "main" }),
    },
    "untrusted/unknown-9001",
    false,
  ],
];

describe("run identity on every CI: 0 pull-request or untrusted builds write a trusted scope", () => {
  it("has at least 40 environments", () => expect(ROWS.length).toBeGreaterThanOrEqual(40));

  it.each(ROWS)("%s", async (_name, env, write, trusted) => {
    const cwd = tempDir("not-a-checkout");
    const plan = await scopesOf(env, cwd);
    expect(plan.write).toBe(write);
    expect(isTrustedScope(plan.write)).toBe(trusted);
    expect(plan.unplaced === null).toBe(!write.startsWith("untrusted/"));
    // Every build reads the default branch's scope last; an untrusted one never writes it.
    expect(plan.read.at(-1)).toBe(`branch/${plan.defaultBranch}`);
    if (!trusted) expect(plan.write).not.toBe(`branch/${plan.defaultBranch}`);
  });

  it("takes the default branch from each CI's own variable", async () => {
    const cwd = tempDir("not-a-checkout");
    const master = async (env: Record<string, string>) => (await scopesOf(env, cwd)).defaultBranch;
    expect(
      await master(
        gitlab({ CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "x", CI_DEFAULT_BRANCH: "master" }),
      ),
    ).toBe("master");
    expect(
      await master(buildkite({ BUILDKITE_BRANCH: "x", BUILDKITE_PIPELINE_DEFAULT_BRANCH: "master" })),
    ).toBe("master");
    expect(await master(jenkins({ BRANCH_NAME: "master", BRANCH_IS_PRIMARY: "true" }))).toBe("master");
    // kcache.yml's key.default-branch wins over all.
    expect(
      (await scopesOf(buildkite({ BUILDKITE_BRANCH: "x" }), cwd, { configuredDefault: "trunk" }))
        .defaultBranch,
    ).toBe("trunk");
  });

  it("says which system it recognised, whether a pull request came from a fork, and the facts it used", async () => {
    const cwd = tempDir("not-a-checkout");
    const fork = await runIdentity(
      gitlab({
        CI_PIPELINE_SOURCE: "merge_request_event",
        CI_MERGE_REQUEST_IID: "6",
        CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "99",
      }),
      cwd,
    );
    expect(fork).toMatchObject({
      system: "GitLab CI",
      ref: { kind: "pr", id: "6", fork: true },
      event: "merge_request_event",
    });
    expect(fork.facts).toMatchObject({
      CI_MERGE_REQUEST_IID: "6",
      CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "99",
      CI_PROJECT_ID: "10",
    });
    const bk = await runIdentity(
      buildkite({
        BUILDKITE_PULL_REQUEST: "43",
        BUILDKITE_PULL_REQUEST_REPO: "https://github.com/someone/kernels.git",
      }),
      cwd,
    );
    expect(bk).toMatchObject({ system: "Buildkite", ref: { kind: "pr", fork: true }, commit: SHA });
    const same = await runIdentity(
      buildkite({
        BUILDKITE_PULL_REQUEST: "42",
        BUILDKITE_PULL_REQUEST_REPO: "https://github.com/org/kernels",
      }),
      cwd,
    );
    expect(same.ref).toMatchObject({ kind: "pr", fork: false });
    const jk = await runIdentity(
      jenkins({ BRANCH_NAME: "PR-13", CHANGE_ID: "13", CHANGE_FORK: "someone" }),
      cwd,
    );
    expect(jk).toMatchObject({ system: "Jenkins", ref: { kind: "pr", fork: true } });
    expect((await runIdentity({ CI: "true", CIRCLECI: "true", CIRCLE_BRANCH: "main" }, cwd)).system).toBe(
      "CircleCI",
    );
  });
});

describe("a checkout with no CI variables", () => {
  function clone(): { dir: string; git: (...a: string[]) => string } {
    const origin = tempDir("origin");
    const run = (cwd: string, ...a: string[]) =>
      execFileSync("git", a, { cwd, stdio: ["ignore", "pipe", "ignore"] })
        .toString()
        .trim();
    run(origin, "init", "-q", "-b", "main");
    fs.writeFileSync(path.join(origin, "a"), "1");
    run(origin, "add", "a");
    run(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one");
    run(origin, "checkout", "-qb", "feature");
    run(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "two");
    run(origin, "checkout", "-q", "main");
    const dir = path.join(tempDir("clone"), "c");
    run(path.dirname(dir), "clone", "-q", origin, dir);
    return { dir, git: (...a) => run(dir, ...a) };
  }

  it("a branch checked out is that branch's build; a detached HEAD is untrusted; no checkout is a local run of the default branch", async () => {
    const { dir, git } = clone();
    expect((await scopesOf({}, dir)).write).toBe("branch/main");
    git("checkout", "-q", "--detach", "origin/feature");
    const detached = await scopesOf({}, dir);
    expect(detached.write).toMatch(/^untrusted\/detached-[0-9a-f]{12}$/);
    expect(detached.unplaced).toMatch(/HEAD is detached.*key\.scope in kcache\.yml, or --scope/);
    expect((await scopesOf({}, tempDir("plain-folder"))).write).toBe("branch/main");
  });

  it("a CI that names one branch while the checkout is on another is untrusted", async () => {
    const { dir, git } = clone();
    git("checkout", "-q", "feature");
    const plan = await scopesOf(
      gitlab({ CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
      dir,
    );
    expect(plan.write).toBe("untrusted/gitlab-ci-9001");
    expect(plan.unplaced).toContain("the checkout is on branch feature");
  });

  describe("a declared scope (key.scope, --scope)", () => {
    const declare = async (env: Record<string, string>, scope: string, cwd = tempDir("nc")) =>
      scopePlan(await runIdentity(env, cwd), { cwd, declared: { scope, source: "kcache.yml: key.scope" } });

    it("default-branch: taken where no fact contradicts it, refused for a pull request or another branch", async () => {
      expect(await declare({ CI: "true", BUILD_NUMBER: "3" }, "default-branch")).toMatchObject({
        write: "branch/main",
        declared: true,
        unplaced: null,
      });
      expect(await declare(jenkins({ GIT_BRANCH: "origin/main" }), "default-branch")).toMatchObject({
        write: "branch/main",
      });
      await expect(
        declare(gitlab({ CI_MERGE_REQUEST_IID: "5", CI_COMMIT_REF_NAME: "main" }), "default-branch"),
      ).rejects.toThrow(
        /kcache\.yml: key\.scope: default-branch refused: GitLab CI says pull request 5; a pull request's build never writes/,
      );
      await expect(declare(buildkite({ BUILDKITE_BRANCH: "feature" }), "default-branch")).rejects.toThrow(
        /Buildkite says branch feature, so it writes branch\/feature/,
      );
      await expect(declare(jenkins({ BRANCH_NAME: "PR-12" }), "default-branch")).rejects.toBeInstanceOf(
        ScopeRefusal,
      );
      await expect(
        declare(
          github({ GITHUB_EVENT_NAME: "pull_request_target", GITHUB_REF: "refs/heads/main" }),
          "default-branch",
        ),
      ).rejects.toBeInstanceOf(ScopeRefusal);
    });

    it("branch/<name>: only where a fact names that branch", async () => {
      expect((await declare(jenkins({ GIT_BRANCH: "origin/main" }), "branch/main")).write).toBe(
        "branch/main",
      );
      await expect(declare(jenkins({ GIT_BRANCH: "origin/feature" }), "branch/main")).rejects.toThrow(
        /no fact names branch\/main/,
      );
      expect(
        (
          await declare(
            { CI: "true", CIRCLECI: "true", CIRCLE_BRANCH: "main", CIRCLE_BUILD_NUM: "5" },
            "branch/main",
          )
        ).write,
      ).toBe("branch/main");
      const { dir, git } = clone();
      git("checkout", "-q", "--detach", "origin/main");
      expect((await declare({}, "branch/main", dir)).write).toBe("branch/main");
      git("checkout", "-q", "--detach", "origin/feature");
      await expect(declare({}, "branch/main", dir)).rejects.toThrow(/no fact names branch\/main/);
    });

    it("less trust than the facts give is always taken", async () => {
      const main = gitlab({
        CI_PIPELINE_SOURCE: "push",
        CI_COMMIT_BRANCH: "main",
        CI_COMMIT_REF_NAME: "main",
      });
      expect((await declare(main, "untrusted/experiments")).write).toBe("untrusted/experiments");
      expect((await declare(main, "branch/main")).write).toBe("branch/main");
    });
  });
});
