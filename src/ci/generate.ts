import type { Config } from "../config/resolve.js";
import { UsageError } from "../errors.js";
import {
  type GeneratedWorkflow,
  generateWorkflows,
  type WorkflowOptions,
  workflowCommandLine,
} from "../github/workflows.js";
import { buildkitePipeline } from "./buildkite.js";
import { gitlabPipeline } from "./gitlab.js";
import { jenkinsPipeline } from "./jenkins.js";
import { pipelineParts } from "./pipeline-parts.js";
import type { CiSystem } from "./systems.js";

/** Where each system's files go when --out is not given: GitHub's workflows folder, else the repository's root. */
export function defaultOut(ci: CiSystem): string {
  return ci === "github" ? ".github/workflows" : ".";
}

/**
 * The files `kcache workflow --ci <system>` writes for one profile, each named by its path under
 * --out: GitHub's workflows, or the GitLab CI file to include, the Buildkite steps to upload, the
 * Jenkinsfile. Every one runs the same commands (`kcache run`, `kcache prewarm`).
 */
export function generatePipelines(
  ci: CiSystem,
  config: Config,
  profileName: string,
  opts: WorkflowOptions,
): GeneratedWorkflow[] {
  if (ci === "github") return generateWorkflows(config, profileName, opts);
  if (opts.utc)
    throw new UsageError(
      `--utc writes GitHub's schedules; ${ci} takes the cron with its time zone (GitLab's and Buildkite's schedule settings, Jenkins's TZ= line): drop --utc`,
    );
  const parts = pipelineParts(config, profileName, opts);
  const command = workflowCommandLine(profileName, { ...opts, ci });
  if (ci === "gitlab") return [gitlabPipeline(parts, command, opts.configPath)];
  if (ci === "buildkite") return [buildkitePipeline(parts, command, opts.configPath, opts)];
  return [jenkinsPipeline(parts, command, opts.configPath)];
}
