import type { Tuning } from "../../manifest/manifest.js";

/** Which autotune results a job is given (a profile's `autotune:`; docs/benchmarks.md). */
export type AutotunePolicy = "pinned" | "fresh" | "any";

/** A job's autotune settings, worked out by job/ from its profile, environment and stack. */
export interface AutotuneSettings {
  policy: AutotunePolicy;
  /** Who this job's autotune results are recorded as produced by. */
  producer: Omit<Tuning, "id" | "revision" | "at">;
  /** `package`: a result is salted with its kernel's Python package (the hook learns which). */
  salt: "none" | "package";
  /** The folder salt paths are relative to: the job's working folder. */
  workdir: string;
  /** Other revisions (resolved commits) whose keys a restore adds to its own: both sides of a comparison warm. */
  otherRevisions: string[];
}

/** No profile, or one that says nothing about autotune: every result is given, none is pinned. */
export function defaultAutotune(device: string, workdir: string): AutotuneSettings {
  return {
    policy: "any",
    producer: { profile: "", benchmark: false, device, env: {} },
    salt: "none",
    workdir,
    otherRevisions: [],
  };
}
