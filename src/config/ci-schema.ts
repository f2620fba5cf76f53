import * as z from "zod";

const label = z.string().min(1);

/**
 * Where `kcache workflow --ci gitlab|buildkite|jenkins` runs a profile's jobs: each system names its
 * machines its own way. The rest of a pipeline (setup, prewarm schedule, timeout) comes from the
 * profile's `github:` block, so one kcache.yml describes the job once for every CI.
 */
export const ciFields = {
  /** GitLab CI: the runner tags a job asks for, and its image (Docker executors). */
  gitlab: z
    .object({ tags: z.array(label).default([]), image: label.optional() })
    .strict()
    .optional(),
  /** Buildkite: the agent query rules of the steps (`queue: h100`). */
  buildkite: z
    .object({ agents: z.record(z.string().min(1), z.string()).default({}) })
    .strict()
    .optional(),
  /** Jenkins: the agent label the pipeline runs on (`agent any` without one). */
  jenkins: z.object({ label: label.optional() }).strict().optional(),
};
