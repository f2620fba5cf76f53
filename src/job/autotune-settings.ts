import path from "node:path";
import { type AutotuneSettings, defaultAutotune } from "../cache/autotune/settings.js";
import type { ProfileSpec } from "../config/profile-schema.js";
import { resolveRevision } from "../keys/revision.js";
import type { Log } from "../log.js";

/**
 * A job's autotune settings from its profile (docs/benchmarks.md): the policy (pinned for a
 * benchmark unless it says otherwise), who its results are recorded as produced by (the profile,
 * whether it is a benchmark, the device model, the autotune-env values in the job's environment),
 * the salt, and the other revisions whose keys it restores, resolved with git now.
 */
export function autotuneSettings(opts: {
  profile: { name: string; spec: ProfileSpec } | null;
  env: NodeJS.ProcessEnv;
  cwd: string;
  device: string;
  log: Log;
}): AutotuneSettings {
  const { profile, env, cwd, device, log } = opts;
  const workdir = profile?.spec.workdir ? path.resolve(cwd, profile.spec.workdir) : cwd;
  if (!profile) return defaultAutotune(device, workdir);
  const spec = profile.spec;
  const jobEnv = { ...env, ...spec.env };
  const values: Record<string, string> = {};
  for (const name of spec["autotune-env"]) values[name] = jobEnv[name] ?? "";
  const otherRevisions: string[] = [];
  for (const name of spec["restore-revisions"]) {
    const commit = resolveRevision(name, workdir);
    if (commit) otherRevisions.push(commit);
    else
      log.warn(
        `profiles.${profile.name}.restore-revisions: git cannot resolve "${name}" here (fetch it: actions/checkout with fetch-depth: 0); its key is not restored`,
      );
  }
  return {
    policy: spec.autotune ?? (spec.benchmark ? "pinned" : "any"),
    producer: { profile: profile.name, benchmark: spec.benchmark, device, env: values },
    salt: spec["autotune-salt"],
    workdir,
    otherRevisions,
  };
}
