import { profileId } from "../config/profile-id.js";
import type { GithubSpec, ProfileSpec } from "../config/profile-schema.js";
import type { Config } from "../config/resolve.js";
import { ConfigError } from "../errors.js";
import { jitterMinute } from "../github/schedule.js";
import { shellWord } from "../github/shell-word.js";
import {
  DEFAULT_TIMEOUT_MINUTES,
  type GeneratedWorkflow,
  type WorkflowOptions,
} from "../github/workflows.js";
import { VERSION } from "../version.js";

export { shellWord };

/**
 * The variable a pipeline's user sets to install kcache their own way (a wheel, a tarball, an
 * image that has it: `true`); the same name on every system and in the Buildkite plugin's `install`.
 */
export const INSTALL_VARIABLE = "KCACHE_INSTALL";
/** The store's write key: the standard AWS variable, which only trusted builds are given. */
export const WRITE_KEY_VARIABLE = "AWS_SECRET_ACCESS_KEY";

/** What every system's pipeline for one profile is made of, worked out once from kcache.yml. */
export interface PipelineParts {
  profileName: string;
  /** The profile's name as a job id (letters, digits, - and _). */
  id: string;
  profile: ProfileSpec;
  /** Setup commands, timeout and prewarm settings: the profile's `github:` block serves every CI. */
  gh: Pick<GithubSpec, "setup" | "paths" | "prewarm" | "timeout-minutes">;
  timeoutMinutes: number;
  /** Where `kcache run` writes its report (kcache-report.json, logs): the artifact's folder. */
  reportDir: string;
  prewarmReportDir: string;
  /** The run's artifacts: its report folder and the result files its checks read. */
  artifacts: string[];
  prewarmArtifacts: string[];
  runLine: string;
  prewarmLine: string;
  /** github.cpu-prewarm's job: its install lines and `kcache prewarm --cpu` (cpu-prewarm-jobs.ts); null without one. */
  cpuPrewarm: { install: string[]; line: string } | null;
  /** The prewarm schedule as written (jittered with --jitter), or null when the profile has none. */
  cron: string | null;
  timezone: string | null;
  /** The store is S3: a build without its write key restores only (KCACHE_READ_ONLY=1). */
  s3: boolean;
  version: string;
  /** owner/repo of kcache's releases (the repository of kcache.yml's github.action). */
  repository: string;
}

/** A profile's pipeline parts; an unknown profile is a ConfigError naming kcache.yml. */
export function pipelineParts(config: Config, profileName: string, opts: WorkflowOptions): PipelineParts {
  const profile = config.profiles[profileName];
  if (!profile) throw new ConfigError(`${config.source}: no profile "${profileName}"`);
  const gh: PipelineParts["gh"] = profile.github ?? { setup: [], paths: [] };
  const reportDir = `.kcache/${profileName}`;
  const prewarmReportDir = `.kcache/${profileName}-prewarm`;
  const inWorkdir = (f: string) => (profile.workdir && !f.startsWith("$") ? `${profile.workdir}/${f}` : f);
  const results = [
    ...profile.checks.map((c) => ("file" in c ? c.file : null)).filter((f): f is string => Boolean(f)),
    ...(profile.compare ? [profile.compare.file] : []),
  ].map(inWorkdir);
  const config_ = opts.configPath === "kcache.yml" ? "" : ` --config ${shellWord(opts.configPath)}`;
  const ifChanged = gh.prewarm?.paths.length
    ? ` --if-changed ${gh.prewarm.paths.map(shellWord).join(" ")}`
    : "";
  const cpu = profile.github?.["cpu-prewarm"];
  for (const ci of ["gitlab", "buildkite", "jenkins"] as const)
    if (profile[ci]?.["cpu-prewarm"] && !cpu)
      throw new ConfigError(
        `${config.source}: profiles.${profileName}.${ci}.cpu-prewarm: says where the CPU prewarm runs, and there is none: add github.cpu-prewarm (its install line), or remove ${ci}.cpu-prewarm`,
      );
  const workers = cpu?.workers ? ` --workers ${cpu.workers}` : "";
  const cron = gh.prewarm
    ? opts.jitter
      ? jitterMinute(gh.prewarm.cron, opts.seed ?? profileName)
      : gh.prewarm.cron
    : null;
  return {
    profileName,
    id: profileId(profileName),
    profile,
    gh,
    timeoutMinutes: gh["timeout-minutes"] ?? DEFAULT_TIMEOUT_MINUTES,
    reportDir,
    prewarmReportDir,
    artifacts: [...new Set([`${reportDir}/`, ...results])],
    prewarmArtifacts: [`${prewarmReportDir}/`],
    runLine: `kcache run --profile ${shellWord(profileName)}${config_} --out ${shellWord(reportDir)}`,
    prewarmLine: `kcache prewarm --profile ${shellWord(profileName)}${config_} --out ${shellWord(prewarmReportDir)}${ifChanged}`,
    cpuPrewarm: cpu
      ? {
          install: cpu.install,
          line: `kcache prewarm --cpu --profile ${shellWord(profileName)}${config_}${workers}`,
        }
      : null,
    cron,
    timezone: gh.prewarm?.timezone ?? null,
    s3: config.store.type === "s3",
    version: VERSION,
    repository: config.github.action.split("@")[0]?.split("/").slice(0, 2).join("/") ?? "kcache/kcache",
  };
}

/**
 * The shell lines that put kcache on PATH: $KCACHE_INSTALL when the user set it, else a kcache
 * already on PATH, else the release's single executable for $KCACHE_VERSION in ./.kcache-bin.
 * POSIX sh, for GitLab's and Jenkins's shells alike (the Buildkite plugin's hook does the same).
 */
export function installLines(repository: string): string[] {
  const bin = '"$PWD/.kcache-bin/kcache"';
  return [
    `if [ -n "\${${INSTALL_VARIABLE}:-}" ]; then`,
    `  eval "$${INSTALL_VARIABLE}"`,
    "elif ! command -v kcache >/dev/null 2>&1; then",
    '  mkdir -p "$PWD/.kcache-bin"',
    `  curl -fsSL -o ${bin} "https://github.com/${repository}/releases/download/v\${KCACHE_VERSION}/kcache-linux-x64"`,
    `  chmod +x ${bin}`,
    '  export PATH="$PWD/.kcache-bin:$PATH"',
    "fi",
  ];
}

/**
 * With an S3 store, a build that was not given the store's write key (a merge or pull request's,
 * an unprotected branch's) restores and never saves: KCACHE_READ_ONLY=1. It reads with the
 * KCACHE_READER_* key when there is one (a key that may only read), else with the machine's own
 * credentials (an instance role, ~/.aws).
 */
export function readOnlyLines(): string[] {
  return [
    `if [ -z "\${${WRITE_KEY_VARIABLE}:-}" ]; then`,
    "  export KCACHE_READ_ONLY=1",
    '  echo "kcache: no write key for the store in this build: restoring only (KCACHE_READ_ONLY=1)"',
    '  if [ -n "${KCACHE_READER_SECRET_ACCESS_KEY:-}" ]; then',
    '    export AWS_ACCESS_KEY_ID="${KCACHE_READER_ACCESS_KEY_ID:-}"',
    '    export AWS_SECRET_ACCESS_KEY="$KCACHE_READER_SECRET_ACCESS_KEY"',
    "  fi",
    "fi",
  ];
}

/** The header every generated file opens with: what it is, the command that wrote it, from which kcache.yml. */
export function headerLines(what: string, command: string, configPath: string): string[] {
  return [what, `Generated by \`${command}\` from ${configPath}; regenerate it rather than editing.`];
}

export type { GeneratedWorkflow };
