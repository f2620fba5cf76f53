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
