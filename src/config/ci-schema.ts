import * as z from "zod";

const label = z.string().min(1);
const agents = z.record(z.string().min(1), z.string());

/**
 * Where `kcache workflow --ci gitlab|buildkite|jenkins` runs a profile's jobs: each system names its
 * machines its own way. The rest of a pipeline (setup, prewarm schedule, timeout, the CPU prewarm's
 * install line) comes from the profile's `github:` block, so one kcache.yml describes the job once for
 * every CI. Each block's `cpu-prewarm:` says where `github.cpu-prewarm`'s job runs on that system.
 */
export const ciFields = {
  /** GitLab CI: the runner tags a job asks for, and its image (Docker executors). */
  gitlab: z
    .object({
      tags: z.array(label).default([]),
      image: label.optional(),
      /** The CPU prewarm job's tags (default none: any runner) and image (default the job's). */
      "cpu-prewarm": z
        .object({ tags: z.array(label).default([]), image: label.optional() })
        .strict()
        .optional(),
    })
    .strict()
    .optional(),
  /** Buildkite: the agent query rules of the steps (`queue: h100`). */
  buildkite: z
    .object({
      agents: agents.default({}),
      /** The CPU prewarm step's agent query rules (default none: the default queue). */
      "cpu-prewarm": z
        .object({ agents: agents.default({}) })
        .strict()
        .optional(),
    })
    .strict()
    .optional(),
  /** Jenkins: the agent label the pipeline runs on (`agent any` without one). */
  jenkins: z
    .object({
      label: label.optional(),
      /** The CPU prewarm stage's agent label (`agent any` without one). */
      "cpu-prewarm": z.object({ label: label.optional() }).strict().optional(),
    })
    .strict()
    .optional(),
};
