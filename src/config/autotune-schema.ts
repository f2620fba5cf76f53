import * as z from "zod";

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: "a variable's name" });

/**
 * A profile's autotune settings (docs/benchmarks.md): whether it is a benchmark, which autotune
 * results its jobs are given, what shapes timing, and which other revisions' keys it restores.
 */
export const autotuneFields = {
  /** A benchmark's profile: what it autotunes is benchmark-grade, and by default it is given only such results. */
  benchmark: z.boolean().default(false),
  /**
   * Which autotune results a job is given: `pinned` (only a benchmark profile's, on the same device
   * model, with the same autotune-env values), `fresh` (none: every binary, no winner; Triton tunes
   * again from cached binaries) or `any`. Default: pinned for a benchmark, any otherwise.
   */
  autotune: z.enum(["pinned", "fresh", "any"]).optional(),
  /** Variables whose values shape timing (FLA_BENCH_REP_MS...): recorded with each result; pinned results must match. */
  "autotune-env": z.array(envName).max(32).default([]),
  /** `package`: an autotune result is salted with its kernel's Python package; any edit there tunes it again. */
  "autotune-salt": z.enum(["none", "package"]).default("none"),
  /** Other revisions whose keys are restored too (git names, resolved at the job's start): origin/main. */
  "restore-revisions": z.array(z.string().min(1).max(200)).max(8).default([]),
};
