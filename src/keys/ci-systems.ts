import { type BuildRef, fullCommit, pick, type RunIdentity, unplacedRef } from "./ci-facts.js";

/*
 * GitLab CI, Buildkite and Jenkins, read from their own variables. env-ci (keys/ci-other.ts) knows
 * these three too, but not the facts trust needs: it reads GitLab's CI_MERGE_REQUEST_ID and not
 * CI_MERGE_REQUEST_IID or CI_PIPELINE_SOURCE, no system's fork variable, Jenkins multibranch's
 * CHANGE_TARGET, nor any default branch. Which facts make a build trusted is kcache's own rule:
 * a branch or tag build is placed only where every fact agrees; any sign of a pull or merge request
 * makes it one; anything else is left unplaced (untrusted).
 */

/**
 * GitLab CI (docs.gitlab.com/ci/variables/predefined_variables): CI_PIPELINE_SOURCE says what made
 * the pipeline; merge request pipelines (`merge_request_event`) set CI_MERGE_REQUEST_IID (the
 * project-level number) and CI_MERGE_REQUEST_SOURCE_PROJECT_ID, which differs from CI_PROJECT_ID for
 * a fork's; CI_COMMIT_BRANCH is set in branch pipelines only ("not available in merge request
 * pipelines or tag pipelines"), CI_COMMIT_TAG in tag pipelines only; CI_DEFAULT_BRANCH names the
 * project's default branch. External pull request pipelines (a GitHub repository built on GitLab)
 * set CI_EXTERNAL_PULL_REQUEST_IID.
 */
export function gitlabIdentity(env: NodeJS.ProcessEnv): RunIdentity {
  const system = "GitLab CI";
  const facts = pick(env, [
    "CI_PIPELINE_SOURCE",
    "CI_MERGE_REQUEST_IID",
    "CI_MERGE_REQUEST_ID",
    "CI_MERGE_REQUEST_SOURCE_PROJECT_ID",
    "CI_PROJECT_ID",
    "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
    "CI_EXTERNAL_PULL_REQUEST_IID",
    "CI_COMMIT_BRANCH",
    "CI_COMMIT_TAG",
    "CI_COMMIT_REF_NAME",
    "CI_DEFAULT_BRANCH",
  ]);
  const source = env.CI_PIPELINE_SOURCE ?? "";
  const prSource = source === "merge_request_event" || source === "external_pull_request_event";
  const id = env.CI_MERGE_REQUEST_IID || env.CI_EXTERNAL_PULL_REQUEST_IID;
  const mr = !!(id || env.CI_MERGE_REQUEST_ID || prSource);
  const sourceProject = env.CI_MERGE_REQUEST_SOURCE_PROJECT_ID;
  const fork = !!sourceProject && !!env.CI_PROJECT_ID && sourceProject !== env.CI_PROJECT_ID;
  const ref = (): BuildRef => {
    if (mr) {
      const base = env.CI_MERGE_REQUEST_TARGET_BRANCH_NAME || env.CI_EXTERNAL_PULL_REQUEST_TARGET_BRANCH_NAME;
      if (id) return { kind: "pr", id, base: base || null, fork };
      return unplaced(system, env, "a merge request pipeline without CI_MERGE_REQUEST_IID", true);
    }
    if (!GITLAB_TRUSTED_SOURCES.has(source))
      return unplaced(
        system,
        env,
        `CI_PIPELINE_SOURCE=${source || "(unset)"} is not a source that builds only the project's own branches and tags`,
        source === "",
        env.CI_COMMIT_BRANCH,
      );
    const branch = env.CI_COMMIT_BRANCH;
    const tag = env.CI_COMMIT_TAG;
    if (branch && tag) return unplaced(system, env, "both CI_COMMIT_BRANCH and CI_COMMIT_TAG are set", false);
    if (tag) return { kind: "tag", name: tag };
    if (!branch)
      return unplaced(
        system,
        env,
        "neither CI_COMMIT_BRANCH nor CI_COMMIT_TAG is set (a child or merge request pipeline?)",
        false,
      );
    if (env.CI_COMMIT_REF_NAME && env.CI_COMMIT_REF_NAME !== branch)
      return unplaced(
        system,
        env,
        `CI_COMMIT_BRANCH=${branch} but CI_COMMIT_REF_NAME=${env.CI_COMMIT_REF_NAME}`,
        false,
      );
    return { kind: "branch", name: branch };
  };
  return {
    system,
    facts,
    ref: ref(),
    defaultBranch: env.CI_DEFAULT_BRANCH || null,
    event: source || null,
    commit: fullCommit(env.CI_COMMIT_SHA),
  };
}

/**
 * Pipeline sources that build a branch or tag of the project itself, at a ref someone with access
 * to the project chose (docs.gitlab.com/ci/jobs/job_rules, "CI_PIPELINE_SOURCE predefined variable").
 * merge_request_event and external_pull_request_event are pull requests; anything not listed
 * (a value added later) is left unplaced.
 */
const GITLAB_TRUSTED_SOURCES = new Set([
  "push",
  "schedule",
  "web",
  "api",
  "trigger",
  "pipeline",
  "parent_pipeline",
  "chat",
  "webide",
]);

/**
 * Buildkite (buildkite.com/docs/pipelines/configure/environment-variables): BUILDKITE_PULL_REQUEST
 * is set on every build, the pull request's number or "false"; BUILDKITE_PULL_REQUEST_REPO is the
 * pull request's repository URL ("" otherwise: another URL than BUILDKITE_REPO is a fork's);
 * BUILDKITE_PULL_REQUEST_BASE_BRANCH its base; BUILDKITE_BRANCH the branch built (a pull request's
 * head branch in its builds); BUILDKITE_TAG a tag build's tag; BUILDKITE_PIPELINE_DEFAULT_BRANCH the
 * pipeline's default branch; BUILDKITE_COMMIT the commit (or "HEAD").
 */
export function buildkiteIdentity(env: NodeJS.ProcessEnv): RunIdentity {
  const system = "Buildkite";
  const facts = pick(env, [
    "BUILDKITE_PULL_REQUEST",
    "BUILDKITE_PULL_REQUEST_REPO",
    "BUILDKITE_PULL_REQUEST_BASE_BRANCH",
    "BUILDKITE_REPO",
    "BUILDKITE_BRANCH",
    "BUILDKITE_TAG",
    "BUILDKITE_PIPELINE_DEFAULT_BRANCH",
    "BUILDKITE_SOURCE",
  ]);
  const pr = env.BUILDKITE_PULL_REQUEST;
  const prRepo = env.BUILDKITE_PULL_REQUEST_REPO ?? "";
  const ref = (): BuildRef => {
    if (pr === undefined || pr === "")
      return unplaced(
        system,
        env,
        "BUILDKITE_PULL_REQUEST is unset (Buildkite sets it on every build: a number or 'false')",
        false,
        env.BUILDKITE_BRANCH,
      );
    if (pr !== "false") {
      if (!/^\d+$/.test(pr))
        return unplaced(system, env, `BUILDKITE_PULL_REQUEST=${pr} is neither a number nor 'false'`, true);
      const fork = prRepo !== "" && repoId(prRepo) !== repoId(env.BUILDKITE_REPO ?? "");
      return { kind: "pr", id: pr, base: env.BUILDKITE_PULL_REQUEST_BASE_BRANCH || null, fork };
    }
    if (prRepo !== "")
      return unplaced(
        system,
        env,
        "BUILDKITE_PULL_REQUEST=false but BUILDKITE_PULL_REQUEST_REPO is set",
        true,
      );
    // A tag build sets BUILDKITE_BRANCH to the tag's name too.
    if (env.BUILDKITE_TAG) return { kind: "tag", name: env.BUILDKITE_TAG };
    if (env.BUILDKITE_BRANCH) return { kind: "branch", name: env.BUILDKITE_BRANCH };
    return unplaced(system, env, "BUILDKITE_BRANCH is unset", false);
  };
  return {
    system,
    facts,
    ref: ref(),
    defaultBranch: env.BUILDKITE_PIPELINE_DEFAULT_BRANCH || null,
    event: env.BUILDKITE_SOURCE || null,
    commit: fullCommit(env.BUILDKITE_COMMIT),
  };
}

/** A repository URL in a form that https and ssh spellings of one repository share. */
function repoId(url: string): string {
  return url
    .trim()
    .toLowerCase()
    .replace(/^[a-z+]+:\/\//, "")
    .replace(/^[^@/]+@/, "")
    .replace(":", "/")
    .replace(/\.git$/, "")
    .replace(/\/$/, "");
}

/**
 * Jenkins (www.jenkins.io/doc/book/pipeline/jenkinsfile, "Using environment variables", and the
 * Pipeline: Multibranch plugin): a multibranch build sets BRANCH_NAME; a change request's build also
 * sets CHANGE_ID (the pull request's number), CHANGE_TARGET (its base), CHANGE_FORK where it comes
 * from a fork, CHANGE_URL, CHANGE_TITLE, CHANGE_AUTHOR and other CHANGE_* variables, and its
 * BRANCH_NAME is arbitrary (PR-24): any CHANGE_* without CHANGE_ID is a change build kcache cannot
 * number (unplaced, and a pull request's to the trust rule); a tag's build sets TAG_NAME;
 * BRANCH_IS_PRIMARY=true marks the default branch. The GitHub Pull Request Builder's ghprbPullId and
 * the GitLab plugin's gitlabMergeRequestIid are pull requests too. A job that is not multibranch
 * (freestyle) says only GIT_BRANCH, which any build parameter can point at a pull request's ref:
 * it stays unplaced, and GIT_BRANCH is a hint a declared scope may agree with.
 */
export function jenkinsIdentity(env: NodeJS.ProcessEnv): RunIdentity {
  const system = "Jenkins";
  const change = changeVariables(env);
  const facts = pick(env, [
    "CHANGE_ID",
    "CHANGE_TARGET",
    "CHANGE_FORK",
    "BRANCH_NAME",
    "BRANCH_IS_PRIMARY",
    "TAG_NAME",
    "GIT_BRANCH",
    "ghprbPullId",
    "gitlabMergeRequestIid",
    ...change,
  ]);
  const id = env.CHANGE_ID || env.ghprbPullId || env.gitlabMergeRequestIid || env.gitlabMergeRequestId;
  const branch = env.BRANCH_NAME;
  const ref = (): BuildRef => {
    if (id)
      return {
        kind: "pr",
        id,
        base: env.CHANGE_TARGET || env.ghprbTargetBranch || env.gitlabTargetBranch || null,
        fork: !!env.CHANGE_FORK,
      };
    if (change.length)
      return unplaced(
        system,
        env,
        `${change.join(", ")} ${change.length > 1 ? "are" : "is"} set without CHANGE_ID: a change request's build`,
        true,
      );
    if (env.TAG_NAME) return { kind: "tag", name: env.TAG_NAME };
    if (branch && /^(PR|MR)-\d+$/.test(branch))
      return unplaced(
        system,
        env,
        `BRANCH_NAME=${branch} names a change request, and CHANGE_ID is unset`,
        true,
      );
    if (branch) return { kind: "branch", name: branch };
    const gitBranch = env.GIT_BRANCH?.replace(/^(refs\/remotes\/)?origin\//, "");
    return unplaced(
      system,
      env,
      "not a multibranch build (BRANCH_NAME, CHANGE_ID and TAG_NAME are unset)",
      false,
      gitBranch,
    );
  };
  return {
    system,
    facts,
    ref: ref(),
    defaultBranch: env.BRANCH_IS_PRIMARY === "true" && branch && !id ? branch : null,
    event: null,
    commit: fullCommit(env.GIT_COMMIT),
  };
}

/**
 * Every CHANGE_* variable set (an empty one too): the multibranch plugin sets them for change
 * requests only (CHANGE_ID, CHANGE_URL, CHANGE_TITLE, CHANGE_AUTHOR, CHANGE_TARGET, CHANGE_BRANCH,
 * CHANGE_FORK...), so any of them says "a change request's build", whatever BRANCH_NAME says.
 */
function changeVariables(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith("CHANGE_") && env[name] !== undefined)
    .sort();
}

function unplaced(
  system: string,
  env: NodeJS.ProcessEnv,
  reason: string,
  prSignal: boolean,
  hint?: string,
): BuildRef {
  return unplacedRef(system, env, reason, prSignal, hint ? [hint] : []);
}
