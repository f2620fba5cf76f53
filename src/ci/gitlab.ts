import { Scalar, stringify } from "yaml";
import type { GeneratedWorkflow } from "../github/workflows.js";
import { cpuPrewarmComment, gitlabCpuPrewarm } from "./cpu-prewarm-jobs.js";
import { headerLines, installLines, type PipelineParts, readOnlyLines } from "./pipeline-parts.js";

/** GitLab expands `$VAR` in rules and variables; scripts are left to the shell. */
const YAML = { lineWidth: 0, aliasDuplicateObjects: false } as const;
/** How long GitLab keeps a run's report: long enough to compare a week of runs. */
const ARTIFACT_DAYS = "30 days";

/**
 * A profile's GitLab CI jobs, as a file `.gitlab-ci.yml` includes (`include: local:`): the job
 * (`kcache run`) on merge request pipelines and on pushes to the default branch, and the prewarm
 * job (`kcache prewarm`) on scheduled pipelines of the default branch. Both keep the run's report
 * as an artifact, passed or failed. With github.cpu-prewarm, a CPU prewarm job on merge requests
 * before the job (cpu-prewarm-jobs.ts). With an S3 store, a job without the store's write key (GitLab
 * gives protected variables to protected branches only) restores and never saves.
 */
export function gitlabPipeline(p: PipelineParts, command: string, configPath: string): GeneratedWorkflow {
  const file = `.gitlab/kcache-${p.id}.yml`;
  const template = `.kcache-${p.id}`;
  const changes = p.gh.paths.length ? { changes: p.gh.paths } : {};
  const gitlab = p.profile.gitlab;
  const block = (lines: string[]) => {
    const s = new Scalar(`${lines.join("\n")}\n`);
    s.type = Scalar.BLOCK_LITERAL;
    return s;
  };
  const artifacts = (paths: string[]) => ({
    name: "$CI_JOB_NAME-$CI_PIPELINE_ID",
    when: "always",
    paths,
    expire_in: ARTIFACT_DAYS,
  });
  const mergeRequests = { if: '$CI_PIPELINE_SOURCE == "merge_request_event"', ...changes };
  const cpu = gitlabCpuPrewarm(p, block, mergeRequests);
  const doc = {
    ...cpu.jobs,
    [template]: {
      stage: "test",
      ...(gitlab?.tags.length ? { tags: gitlab.tags } : {}),
      ...(gitlab?.image ? { image: gitlab.image } : {}),
      timeout: `${p.timeoutMinutes} minutes`,
      variables: { KCACHE_VERSION: p.version },
      before_script: [
        ...p.gh.setup,
        block(installLines(p.repository)),
        ...(p.s3 ? [block(readOnlyLines())] : []),
      ],
    },
    [`kcache-${p.id}`]: {
      extends: template,
      ...cpu.needs,
      rules: [
        mergeRequests,
        { if: '$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE == "push"', ...changes },
      ],
      script: [p.runLine],
      artifacts: artifacts(p.artifacts),
    },
    [`kcache-${p.id}-prewarm`]: {
      extends: template,
      rules: [{ if: '$CI_PIPELINE_SOURCE == "schedule" && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH' }],
      // --if-changed diffs the newest cache's revision with HEAD: the whole history.
      variables: { GIT_DEPTH: "0" },
      script: [p.prewarmLine],
      artifacts: artifacts(p.prewarmArtifacts),
    },
  };
  const schedule = p.cron
    ? `a pipeline schedule on the default branch (Build > Pipeline schedules): cron "${p.cron}"${p.timezone ? `, time zone ${p.timezone}` : " (UTC)"}`
    : "a pipeline schedule on the default branch (Build > Pipeline schedules; GitLab takes the cron and its time zone there)";
  const comments = [
    ...headerLines(`kcache: ${p.profileName} on GitLab CI`, command, configPath),
    `Include it from .gitlab-ci.yml: include: [{ local: ${file} }]. Its jobs run in stage test.`,
    "kcache: $KCACHE_VERSION's single executable, unless kcache is on PATH or KCACHE_INSTALL (a CI/CD",
    "variable) says how to install it: pip install <the release's wheel>, npm install -g <its tarball>, true.",
    ...(p.s3
      ? [
          "The store's write key: CI/CD variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, protected and masked,",
          "so only protected branches' pipelines save. Other pipelines (merge requests) restore only",
          "(KCACHE_READ_ONLY=1), reading with KCACHE_READER_ACCESS_KEY_ID / KCACHE_READER_SECRET_ACCESS_KEY",
          "(masked, not protected: a key that may only read) or the runner's own credentials.",
        ]
      : []),
    `The prewarm runs in ${schedule}.`,
    ...cpuPrewarmComment(p, "merge requests"),
    ...(p.cpuPrewarm
      ? ["The job needs it: GitLab then starts the job without waiting for earlier stages' jobs."]
      : []),
  ];
  return { file, text: `${comments.map((c) => `# ${c}`).join("\n")}\n${stringify(doc, YAML)}` };
}
