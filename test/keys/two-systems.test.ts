import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";

/*
 * A job's own definition can set any variable, another CI's included (GitLab's pipeline variables,
 * a Buildkite step's env:, a Jenkinsfile's environment {}). Variables of two systems at once say
 * nothing kcache can trust: the build is unplaced, whichever system's variables look trusted. Run
 * through the real CLI, as a CI runs it: `kcache key --json` prints the scope a save would write.
 */

const SHA = "0123456789abcdef0123456789abcdef01234567";
const GITHUB_PUSH_TO_MAIN = {
  CI: "true",
  GITHUB_ACTIONS: "true",
  GITHUB_EVENT_NAME: "push",
  GITHUB_REF: "refs/heads/main",
  GITHUB_SHA: SHA,
  GITHUB_RUN_ID: "555",
};
const GITLAB_FORK_MR = {
  GITLAB_CI: "true",
  CI_PROJECT_ID: "10",
  CI_PIPELINE_ID: "9001",
  CI_PIPELINE_SOURCE: "merge_request_event",
  CI_MERGE_REQUEST_IID: "6",
  CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "99",
  CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
  CI_DEFAULT_BRANCH: "main",
};
const GITLAB_PUSH_TO_MAIN = {
  GITLAB_CI: "true",
  CI_PROJECT_ID: "10",
  CI_PIPELINE_ID: "9001",
  CI_PIPELINE_SOURCE: "push",
  CI_COMMIT_BRANCH: "main",
  CI_COMMIT_REF_NAME: "main",
  CI_DEFAULT_BRANCH: "main",
};
const BUILDKITE_MAIN = {
  BUILDKITE: "true",
  BUILDKITE_BUILD_ID: "0190-abcd",
  BUILDKITE_PULL_REQUEST: "false",
  BUILDKITE_BRANCH: "main",
  BUILDKITE_PIPELINE_DEFAULT_BRANCH: "main",
};
const JENKINS = { JENKINS_URL: "https://ci.example.org/", BUILD_NUMBER: "17", BUILD_TAG: "jenkins-k-17" };

interface KeyJson {
  writeScope: string;
  trusted: boolean;
  build: { system: string | null; is: { kind: string; reason?: string; prSignal?: boolean } };
}

/** `kcache key --json` in a project that is no git checkout, with exactly these CI variables. */
async function keyUnder(vars: Record<string, string>): Promise<KeyJson & { stderr: string }> {
  const p = project({ prefix: "ci" });
  const env = {
    PATH: p.env.PATH,
    PYTHONPATH: p.env.PYTHONPATH,
    HOME: p.env.HOME,
    CACHE_ROOT: p.cache,
    KCACHE_STATE_DIR: p.env.KCACHE_STATE_DIR,
    ...vars,
  };
  const r = await runCli(["key", "--json"], { env, cwd: p.dir });
  expect(r.code, r.stderr).toBe(0);
  return { ...(JSON.parse(r.stdout) as KeyJson), stderr: r.stderr };
}

describe("two CIs' variables at once are untrusted (kcache key --json)", () => {
  it("GitHub's push to main beside a GitLab fork merge request: unplaced, a pull request's signal, both named", async () => {
    const k = await keyUnder({ ...GITHUB_PUSH_TO_MAIN, ...GITLAB_FORK_MR });
    expect(k.writeScope).toMatch(/^untrusted\//);
    expect(k.trusted).toBe(false);
    expect(k.build.is.kind).toBe("unplaced");
    expect(k.build.is.prSignal).toBe(true);
    expect(k.build.is.reason).toMatch(/GitHub Actions/);
    expect(k.build.is.reason).toMatch(/GitLab CI/);
    // No declaration can make it trusted: some fact says pull request.
    expect(k.stderr).toMatch(/It may be a pull request's, so no declaration makes it trusted/);
  });

  it("GitHub's push to main beside GitLab's push to main: still unplaced, with no pull request's signal", async () => {
    const k = await keyUnder({ ...GITHUB_PUSH_TO_MAIN, ...GITLAB_PUSH_TO_MAIN });
    expect(k.writeScope).toMatch(/^untrusted\//);
    expect(k.build.is).toMatchObject({ kind: "unplaced", prSignal: false });
    expect(k.build.is.reason).toMatch(/GitHub Actions and GitLab CI/);
  });

  it.each([
    ["GitHub and Buildkite", { ...GITHUB_PUSH_TO_MAIN, ...BUILDKITE_MAIN }, /GitHub Actions and Buildkite/],
    [
      "GitHub and Jenkins",
      { ...GITHUB_PUSH_TO_MAIN, ...JENKINS, BRANCH_NAME: "main" },
      /GitHub Actions and Jenkins/,
    ],
    [
      "GitHub and CircleCI (env-ci's)",
      { ...GITHUB_PUSH_TO_MAIN, CIRCLECI: "true" },
      /GitHub Actions and CircleCI/,
    ],
    [
      "Buildkite and Jenkins",
      { CI: "true", ...BUILDKITE_MAIN, ...JENKINS, BRANCH_NAME: "main" },
      /Buildkite and Jenkins/,
    ],
  ])("%s at once: unplaced", async (_name, vars, names) => {
    const k = await keyUnder(vars);
    expect(k.writeScope).toMatch(/^untrusted\//);
    expect(k.build.is.kind).toBe("unplaced");
    expect(k.build.is.reason).toMatch(names);
  });

  it("GitHub's push alone is still placed on its branch", async () => {
    const k = await keyUnder(GITHUB_PUSH_TO_MAIN);
    expect(k.writeScope).toBe("branch/main");
    expect(k.trusted).toBe(true);
  });
});

describe("Jenkins: any CHANGE_* variable makes it a change build", () => {
  it.each([
    ["CHANGE_URL", { CHANGE_URL: "https://github.com/org/kernels/pull/12" }],
    ["CHANGE_AUTHOR", { CHANGE_AUTHOR: "someone" }],
    ["CHANGE_TITLE", { CHANGE_TITLE: "speed up" }],
  ])("BRANCH_NAME=main with %s and no CHANGE_ID: unplaced, a pull request's signal", async (_name, vars) => {
    const k = await keyUnder({ ...JENKINS, BRANCH_NAME: "main", BRANCH_IS_PRIMARY: "true", ...vars });
    expect(k.writeScope).toMatch(/^untrusted\/jenkins-/);
    expect(k.build.is).toMatchObject({ kind: "unplaced", prSignal: true });
    expect(k.build.is.reason).toContain(Object.keys(vars)[0]);
  });

  it("with CHANGE_ID it is that pull request's build", async () => {
    const k = await keyUnder({ ...JENKINS, BRANCH_NAME: "PR-12", CHANGE_ID: "12", CHANGE_AUTHOR: "someone" });
    expect(k.writeScope).toBe("pr/12");
  });

  it("a branch build with no CHANGE_* stays on its branch", async () => {
    const k = await keyUnder({ ...JENKINS, BRANCH_NAME: "main", BRANCH_IS_PRIMARY: "true" });
    expect(k.writeScope).toBe("branch/main");
  });
});
