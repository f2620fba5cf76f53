import { installLines, type PipelineParts, readOnlyLines } from "./pipeline-parts.js";

/**
 * The CPU prewarm (`github.cpu-prewarm`, docs/cpu-prewarm.md) in each system's form: a job for merge
 * or pull requests only, before the GPU job, on a CPU machine, that installs the job's Python stack
 * with the install line and runs `kcache prewarm --cpu`; the GPU job runs after it whether it passed,
 * failed or was left out (a push, a schedule). With an S3 store it has the write key exactly where the
 * GPU job has it: where a merge request's GPU job restores only, so does it (and compiles nothing).
 */

/** The CPU prewarm's job name or step key beside the profile's: kcache-<profile>-cpu-prewarm. */
export function cpuPrewarmKey(p: PipelineParts): string {
  return `kcache-${p.id}-cpu-prewarm`;
}

/** What every system's header says about the CPU prewarm `name` (its job, step or stage), or nothing. */
export function cpuPrewarmComment(p: PipelineParts, where: string, name = cpuPrewarmKey(p)): string[] {
  if (!p.cpuPrewarm) return [];
  return [
    `On ${where} ${name} runs first, on a CPU machine: it compiles the kernels whose source changed`,
    "into their scope (kcache prewarm --cpu), and the job runs after it whether it passed or failed.",
    ...(p.s3
      ? [
          "Like the job, it saves only in a build given the store's write key; without one it compiles nothing.",
        ]
      : []),
  ];
}

/** GitLab: a job on merge request pipelines, allowed to fail, that the job needs when it is there. */
export function gitlabCpuPrewarm(
  p: PipelineParts,
  block: (lines: string[]) => unknown,
  rule: Record<string, unknown>,
): { jobs: Record<string, unknown>; needs: Record<string, unknown> } {
  if (!p.cpuPrewarm) return { jobs: {}, needs: {} };
  const gitlab = p.profile.gitlab;
  const tags = gitlab?.["cpu-prewarm"]?.tags ?? [];
  // The job's image by default: a CUDA image runs without a GPU, with the job's Python.
  const image = gitlab?.["cpu-prewarm"]?.image ?? gitlab?.image;
  const job = {
    stage: "test",
    ...(tags.length ? { tags } : {}),
    ...(image ? { image } : {}),
    timeout: `${p.timeoutMinutes} minutes`,
    variables: { KCACHE_VERSION: p.version },
    rules: [rule],
    allow_failure: true,
    before_script: [
      ...p.cpuPrewarm.install,
      block(installLines(p.repository)),
      ...(p.s3 ? [block(readOnlyLines())] : []),
    ],
    script: [p.cpuPrewarm.line],
  };
  // optional: outside merge requests the job is not in the pipeline, and the need falls away.
  const key = cpuPrewarmKey(p);
  return { jobs: { [key]: job }, needs: { needs: [{ job: key, optional: true, artifacts: false }] } };
}

/** Buildkite: a soft-failing step on pull request builds; the job's step depends on it, failure allowed. */
export function buildkiteCpuPrewarm(
  p: PipelineParts,
  plugin: string,
  settings: Record<string, unknown>,
  escaped: (s: string) => string,
): { steps: Record<string, unknown>[]; dependsOn: Record<string, unknown> } {
  if (!p.cpuPrewarm) return { steps: [], dependsOn: {} };
  const agents = p.profile.buildkite?.["cpu-prewarm"]?.agents ?? {};
  const workers = p.profile.github?.["cpu-prewarm"]?.workers;
  const key = cpuPrewarmKey(p);
  const step = {
    label: `kcache ${p.profileName} CPU prewarm`,
    key,
    // Left out of builds that are not a pull request's: a dependency on it is then ignored.
    if: "build.pull_request.id != null",
    ...(Object.keys(agents).length ? { agents } : {}),
    timeout_in_minutes: p.timeoutMinutes,
    soft_fail: true,
    command: p.cpuPrewarm.install.map(escaped),
    plugins: [{ [plugin]: { ...settings, cpu: true, ...(workers ? { workers } : {}) } }],
  };
  return { steps: [step], dependsOn: { depends_on: [{ step: key, allow_failure: true }] } };
}
