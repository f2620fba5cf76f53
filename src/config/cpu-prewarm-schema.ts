import * as z from "zod";

/** A job's container (an image name, or GitHub's image/options/env form), as Ascend CI runs in one. */
export const containerSchema = z.union([
  z.string().min(1),
  z
    .object({
      image: z.string().min(1),
      options: z.string().optional(),
      env: z.record(z.string(), z.string()).optional(),
    })
    .strict(),
]);

/** GitHub's `runs-on:`: a label, or labels a runner must all have. */
export const runsOnSchema = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

const INSTALL_MISSING =
  "missing: the command that installs the job's Python stack on the CPU runner, with the GPU job's torch and triton versions; add it, e.g. install: pip install -e . torch==2.11.0 triton==3.6.0";

/**
 * `github.cpu-prewarm`: `kcache workflow` writes a job that runs `kcache prewarm --cpu` on a machine
 * with no GPU for each pull request, before the GPU job (docs/cpu-prewarm.md): it compiles the kernels
 * whose source changed into the pull request's scope, so the GPU job restores them. The GPU job runs
 * whether it passed, failed or was skipped. Where it runs on GitLab, Buildkite and Jenkins: their
 * blocks' own `cpu-prewarm:` (ci-schema.ts).
 */
export const cpuPrewarmSchema = z
  .object({
    /** The CPU runner (GitHub's labels). */
    "runs-on": runsOnSchema.default("ubuntu-latest"),
    /** The job's Python stack, installed as the GPU job installs it: one command, or several in order. */
    install: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)], {
        error: (issue) => (issue.input === undefined ? INSTALL_MISSING : undefined),
      })
      .transform((v) => (Array.isArray(v) ? v : [v])),
    /** Compile processes at once (`--workers`); default the runner's CPU count. */
    workers: z.number().int().min(1).max(256).optional(),
    /** The CPU job's container, like the GPU job's `container:`. */
    container: containerSchema.optional(),
  })
  .strict();

export type CpuPrewarmSpec = z.output<typeof cpuPrewarmSchema>;
