import { stringify } from "yaml";
import { toUtcCron } from "../github/schedule.js";
import type { GeneratedWorkflow, WorkflowOptions } from "../github/workflows.js";
import { buildkiteCpuPrewarm, cpuPrewarmComment } from "./cpu-prewarm-jobs.js";
import { headerLines, type PipelineParts } from "./pipeline-parts.js";

const YAML = { lineWidth: 0, aliasDuplicateObjects: false } as const;

/** Buildkite substitutes `$VAR` when a pipeline is uploaded: a command's own `$` is written `$$`. */
function uploadEscaped(s: string): string {
  return s.replace(/\$/g, "$$$$");
}

/**
 * A profile's Buildkite steps, for `buildkite-agent pipeline upload`: the job through kcache's
 * plugin (buildkite-plugin/: the step's command as setup, then `kcache run`) on every build but
 * scheduled ones, and the prewarm (`kcache prewarm`) on scheduled builds. The report and the
 * checks' result files are the steps' artifacts; the agent uploads them whether the step passed
 * or not. With an S3 store the plugin restores only (KCACHE_READ_ONLY=1) where the agent gave the
 * build no write key. With github.cpu-prewarm, a CPU prewarm step on pull requests before the job.
 */
export function buildkitePipeline(
  p: PipelineParts,
  command: string,
  configPath: string,
  opts: Pick<WorkflowOptions, "configPath" | "now">,
): GeneratedWorkflow {
  const file = `.buildkite/pipeline.kcache-${p.id}.yml`;
  const plugin = `https://github.com/${p.repository}.git/buildkite-plugin#v${p.version}`;
  const agents = p.profile.buildkite?.agents ?? {};
  const settings = {
    profile: p.profileName,
    ...(opts.configPath === "kcache.yml" ? {} : { config: opts.configPath }),
    ...(p.s3 ? { "read-only": "auto" } : {}),
  };
  const step = (label: string, key: string, condition: string, config: object, artifacts: string[]) => ({
    label,
    key,
    if: condition,
    ...(Object.keys(agents).length ? { agents } : {}),
    timeout_in_minutes: p.timeoutMinutes,
    ...(p.gh.setup.length ? { command: p.gh.setup.map(uploadEscaped) } : {}),
    plugins: [{ [plugin]: config }],
    artifact_paths: artifacts.map((a) => (a.endsWith("/") ? `${a}**/*` : a)),
  });
  const prewarmPaths = p.gh.prewarm?.paths ?? [];
  const cpu = buildkiteCpuPrewarm(p, plugin, settings, uploadEscaped);
  const doc = {
    steps: [
      ...cpu.steps,
      {
        ...step(
          `kcache ${p.profileName}`,
          `kcache-${p.id}`,
          'build.source != "schedule"',
          settings,
          p.artifacts,
        ),
        ...cpu.dependsOn,
      },
      step(
        `kcache ${p.profileName} prewarm`,
        `kcache-${p.id}-prewarm`,
        'build.source == "schedule" && build.branch == pipeline.default_branch',
        { ...settings, prewarm: true, ...(prewarmPaths.length ? { "if-changed": prewarmPaths } : {}) },
        p.prewarmArtifacts,
      ),
    ],
  };
  const comments = [
    ...headerLines(`kcache: ${p.profileName} on Buildkite`, command, configPath),
    `Upload it from the pipeline's first step: buildkite-agent pipeline upload ${file}`,
    "The plugin (agent 3.108 or later, for a plugin in a repository's folder) runs the step's command",
    "first (setup), then kcache: the release's single executable, unless kcache is on PATH or the",
    "plugin's install setting says how to install it.",
    ...(p.s3
      ? [
          "The store's write key: the agent's environment hook exports AWS_ACCESS_KEY_ID and",
          "AWS_SECRET_ACCESS_KEY (from its secrets: buildkite-agent secret get, an S3 secrets bucket, a file)",
          "only for builds of the default branch that are not pull requests; every other build restores",
          "only (read-only: auto), reading with KCACHE_READER_* or the agent's own credentials.",
        ]
      : []),
    `The prewarm runs in a schedule of this pipeline on its default branch (Pipeline Settings > Schedules)${scheduleNote(p, opts.now)}.`,
    ...cpuPrewarmComment(p, "pull requests"),
  ];
  return { file, text: `${comments.map((c) => `# ${c}`).join("\n")}\n${stringify(doc, YAML)}` };
}

/** Buildkite's schedules read cron in UTC: the profile's zoned cron, converted where it can be. */
function scheduleNote(p: PipelineParts, now?: Date): string {
  if (!p.cron) return "";
  if (!p.timezone) return `: cron "${p.cron}" (UTC)`;
  const utc = toUtcCron(p.cron, p.timezone, now);
  return utc.ok
    ? `: "${p.cron}" in ${p.timezone} is ${utc.crons.map((c) => `"${c}"`).join(" plus ")} in UTC`
    : `: "${p.cron}" in ${p.timezone} (no UTC cron matches it all year: ${utc.reason})`;
}
