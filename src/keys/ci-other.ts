import { pick, type RunIdentity, runNumber, slug } from "./ci-facts.js";

/**
 * Any other CI: env-ci (the detection semantic-release uses, ~30 services) says which it is and
 * whether the build is a pull request's. Its pull requests get their own scope; its branch builds
 * stay unplaced (untrusted), since kcache has not read that system's documentation for what makes a
 * build trusted: env-ci's branch is only a hint that a declared `key.scope` may agree with. A CI that
 * env-ci does not know either (only CI=true) is unplaced the same way. Imported lazily: env-ci and
 * its process library cost start-up that GitHub Actions and a developer's machine never need.
 */
export async function otherCiIdentity(
  env: NodeJS.ProcessEnv,
  cwd: string,
  markers: string[],
): Promise<RunIdentity> {
  const { default: envCi } = await import("env-ci");
  const ci = envCi({ env, cwd });
  const system = ci.service && ci.name ? ci.name : null;
  const facts = {
    ...pick(env, markers),
    ...(system
      ? {
          "env-ci": `${system}${ci.isPr ? `, pull request ${ci.pr ?? "(no number)"}` : ""}${ci.branch ? `, branch ${ci.branch}` : ""}`,
        }
      : {}),
  };
  const base = { system, facts, defaultBranch: null, event: null, commit: null };
  const name = `${slug(system ?? "ci")}-${ci.build ? ci.build.replace(/[^A-Za-z0-9._-]+/g, "-").slice(0, 64) : runNumber(env)}`;
  if (ci.isPr) {
    if (ci.pr && /^[A-Za-z0-9._-]{1,64}$/.test(ci.pr))
      return { ...base, ref: { kind: "pr", id: ci.pr, base: ci.branch ?? null, fork: false } };
    return {
      ...base,
      ref: {
        kind: "unplaced",
        reason: `${system}: a pull request without a number`,
        prSignal: true,
        hints: [],
        name,
      },
    };
  }
  const reason = system
    ? `${system} is not a CI whose variables kcache reads to trust a build (GitHub Actions, GitLab CI, Buildkite, Jenkins)`
    : `an unknown CI (${markers.join(", ")} set, and no system kcache or env-ci recognises)`;
  return {
    ...base,
    ref: { kind: "unplaced", reason, prSignal: false, hints: ci.branch ? [ci.branch] : [], name },
  };
}

/**
 * How env-ci recognises each other system (its services/*.js `detect`), read here without loading
 * env-ci, so that a GitHub Actions, GitLab, Buildkite or Jenkins build costs nothing more to check
 * for a second system's variables (keys/run-identity.ts).
 */
const OTHER_CI_MARKERS: { name: string; set: (env: NodeJS.ProcessEnv) => boolean }[] = [
  { name: "AppVeyor", set: (env) => !!env.APPVEYOR },
  { name: "Azure Pipelines", set: (env) => !!env.BUILD_BUILDURI },
  { name: "Bamboo", set: (env) => !!env.bamboo_agentId },
  { name: "Bitbucket Pipelines", set: (env) => !!env.BITBUCKET_BUILD_NUMBER },
  { name: "Bitrise", set: (env) => !!env.BITRISE_IO },
  { name: "Buddy", set: (env) => !!env.BUDDY_WORKSPACE_ID },
  { name: "CircleCI", set: (env) => !!env.CIRCLECI },
  { name: "Cirrus CI", set: (env) => !!env.CIRRUS_CI },
  { name: "Cloudflare Pages", set: (env) => env.CF_PAGES === "1" },
  { name: "AWS CodeBuild", set: (env) => !!env.CODEBUILD_BUILD_ID },
  { name: "Codefresh", set: (env) => !!env.CF_BUILD_ID },
  { name: "Codeship", set: (env) => env.CI_NAME === "codeship" },
  { name: "Drone", set: (env) => !!env.DRONE },
  { name: "JetBrains Space", set: (env) => !!env.JB_SPACE_EXECUTION_NUMBER },
  { name: "Netlify", set: (env) => env.NETLIFY === "true" },
  { name: "Puppet", set: (env) => !!env.DISTELLI_APPNAME },
  { name: "Sail CI", set: (env) => !!env.SAILCI },
  { name: "Screwdriver.cd", set: (env) => !!env.SCREWDRIVER },
  { name: "Scrutinizer", set: (env) => !!env.SCRUTINIZER },
  { name: "Semaphore", set: (env) => !!env.SEMAPHORE },
  { name: "Shippable", set: (env) => !!env.SHIPPABLE },
  { name: "TeamCity", set: (env) => !!env.TEAMCITY_VERSION },
  { name: "Travis CI", set: (env) => !!env.TRAVIS },
  { name: "Vela", set: (env) => !!env.VELA },
  { name: "Vercel", set: (env) => !!(env.VERCEL || env.NOW_GITHUB_DEPLOYMENT) },
  { name: "Wercker", set: (env) => !!env.WERCKER_MAIN_PIPELINE_STARTED },
  { name: "Woodpecker CI", set: (env) => env.CI === "woodpecker" },
];

/** The systems other than those kcache reads itself whose variables are set, by env-ci's names. */
export function otherCiSystems(env: NodeJS.ProcessEnv): string[] {
  return OTHER_CI_MARKERS.filter((m) => m.set(env)).map((m) => m.name);
}
