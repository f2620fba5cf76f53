import type { GithubSpec } from "../config/profile-schema.js";
import { ConfigError } from "../errors.js";
import { jobId, selfHosted } from "./runners.js";

/** What GitHub lists the CPU prewarm job as, after the workflow's name: what it does. */
export const CPU_PREWARM_JOB_NAME = "compile changed kernels on a CPU";

/** The `if:` of the CPU prewarm job: pull requests only (on the default branch the GPU job compiles and saves). */
export const PULL_REQUESTS_ONLY = "github.event_name == 'pull_request'";
const SAME_REPOSITORY = "github.event.pull_request.head.repo.full_name == github.repository";

/**
 * The `if:` of a GPU job that needs the CPU prewarm job: it runs when that job passed, failed or was
 * skipped (a push, a fork's pull request), and not when the run was cancelled. A status function is
 * what lets it run after a needed job that did not pass; the job's own condition still holds.
 */
export function afterCpuPrewarm(own?: string): string {
  return own ? `\${{ !cancelled() && (${own}) }}` : "${{ !cancelled() }}";
}

export interface CpuPrewarmJobParts {
  /** kcache.yml as the error names it, the profile, and kcache.yml's path as the steps see it. */
  source: string;
  profileName: string;
  configPath: string;
  /** kcache.yml's github.action: the action the workflow's other kcache steps use. */
  action: string;
  gh: GithubSpec;
  timeoutMinutes: number;
  /** The checkout step, as the workflow's other jobs write it. */
  checkout: unknown;
}

/**
 * The profile's jobs: its GPU job, and before it, where the profile has `github.cpu-prewarm`
 * (docs/cpu-prewarm.md), the CPU prewarm job. That one runs on pull requests only, on the CPU runner:
 * it checks out the pull request, installs the job's Python stack with the install line, and runs
 * `kcache prewarm --cpu` through the kcache action, which compiles the kernels whose source changed
 * and saves them into the pull request's scope with the same store and credentials as the GPU job.
 * The GPU job needs it but runs whatever became of it: a CPU prewarm only ever makes the GPU job
 * warmer, and its failure leaves the run green (`continue-on-error`). Pull requests from forks skip
 * it where either job's runner is self-hosted (unless github.fork-pull-requests allows them).
 */
export function withCpuPrewarm(p: CpuPrewarmJobParts, gpuJob: Record<string, unknown>) {
  const { gh, profileName } = p;
  const id = jobId(profileName);
  const cpu = gh["cpu-prewarm"];
  if (!cpu) return { [id]: gpuJob };
  if (!gh.on.includes("pull_request"))
    throw new ConfigError(
      `${p.source}: profiles.${profileName}.github.cpu-prewarm: the CPU prewarm runs for pull requests, and github.on (${gh.on.join(", ")}) has no pull_request: add pull_request to github.on, or remove cpu-prewarm`,
    );
  const noForks = !gh["fork-pull-requests"] && (selfHosted(gh["runs-on"]) || selfHosted(cpu["runs-on"]));
  const cpuId = `${id}-cpu-prewarm`;
  const install = cpu.install.map((run, i) => ({
    name: cpu.install.length > 1 ? `Install the Python stack (${i + 1})` : "Install the Python stack",
    run,
  }));
  const kcache = {
    name: `kcache prewarm --cpu ${profileName}`,
    uses: p.action,
    with: {
      mode: "prewarm",
      cpu: true,
      profile: profileName,
      config: p.configPath,
      ...(cpu.workers ? { workers: cpu.workers } : {}),
    },
  };
  const cpuJob = {
    name: CPU_PREWARM_JOB_NAME,
    if: noForks ? `${PULL_REQUESTS_ONLY} && ${SAME_REPOSITORY}` : PULL_REQUESTS_ONLY,
    "runs-on": cpu["runs-on"],
    ...(cpu.container ? { container: cpu.container } : {}),
    "timeout-minutes": p.timeoutMinutes,
    "continue-on-error": true,
    steps: [p.checkout, ...install, kcache],
  };
  const { if: own, ...rest } = gpuJob;
  return {
    [cpuId]: cpuJob,
    [id]: { needs: [cpuId], if: afterCpuPrewarm(typeof own === "string" ? own : undefined), ...rest },
  };
}
