import * as z from "zod";
import { autotuneFields } from "./autotune-schema.js";
import { ciFields } from "./ci-schema.js";
import { containerSchema, cpuPrewarmSchema, runsOnSchema } from "./cpu-prewarm-schema.js";
import { CronSyntaxError, parseCron } from "./cron.js";
import { parseDuration } from "./durations.js";
import { timeZoneProblem } from "./time-zone.js";

const envMap = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  z.union([z.string(), z.number(), z.boolean()]).transform(String),
);
const duration = z
  .string()
  .refine((s) => parseDuration(s) !== null, { message: "use a number and a unit, like 90s, 30m or 2h" });
const stepName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, { message: "use letters, digits, '.', '_' and '-' only" });
/** Shell scripts sourced (in order, in bash) before commands run: their exported environment is the commands'. */
const sourceList = z
  .union([z.string().min(1), z.array(z.string().min(1))])
  .transform((v) => (Array.isArray(v) ? v : [v]));
const devices = z
  .array(z.union([z.number().int().nonnegative(), z.string().min(1)]).transform(String))
  .min(1);

export const commandSchema = z
  .object({
    name: stepName,
    run: z.string().min(1),
    env: envMap.default({}),
    workdir: z.string().optional(),
    timeout: duration.optional(),
    /** Visible devices for this command (CUDA_VISIBLE_DEVICES and its NPU/HIP twins). */
    devices: devices.optional(),
    /** Scripts sourced in this command's shell before it runs, after the profile's. */
    source: sourceList.optional(),
  })
  .strict()
  .meta({ title: "command" });

export const groupSchema = z
  .object({
    name: stepName,
    /** Commands run at the same time. */
    parallel: z.array(commandSchema).min(1),
    /** One device per command, round robin; at most this many run at once. */
    devices: devices.optional(),
  })
  .strict()
  .meta({ title: "parallel group" });

/**
 * Where the records are in a JSON result file: a dotted path to an array ("current.results"), or "."
 * for the file's top-level object as the one record; default the file itself or its "results".
 */
const records = z.string().optional();
const severity = z.enum(["error", "warn"]).default("error");
const fieldList = z.array(z.string().min(1)).min(1);
const recordValue = z.union([z.string(), z.number(), z.boolean()]);

const base = { name: z.string().optional(), severity };

export const checkSchema = z.discriminatedUnion("type", [
  z
    .object({
      ...base,
      type: z.literal("coverage"),
      file: z.string(),
      records,
      /** Fields that identify a record; default: the fields the expected records name. */
      key: fieldList.optional(),
      expect: z
        .object({
          /** Factors of a cartesian product: each a map of one field to its values, or a list of partial records. */
          product: z
            .array(
              z.union([
                z.record(z.string(), z.array(recordValue).min(1)),
                z.array(z.record(z.string(), recordValue)).min(1),
              ]),
            )
            .min(1)
            .optional(),
          list: z.array(z.record(z.string(), recordValue)).min(1).optional(),
          /** How many records there are in all. */
          count: z.number().int().nonnegative().optional(),
          /** How many times each expected record appears (default 1). */
          each: z.number().int().positive().default(1),
        })
        .strict()
        .refine((e) => e.product || e.list || e.count !== undefined, {
          message: "give product, list or count",
        }),
    })
    .strict(),
  z
    .object({ ...base, type: z.literal("finite-positive"), file: z.string(), records, fields: fieldList })
    .strict(),
  z
    .object({
      ...base,
      type: z.literal("values"),
      file: z.string(),
      records,
      /** Field (dotted path) to the value it must have, or a list of the values it may have. */
      expect: z
        .record(z.string().min(1), z.union([recordValue, z.array(recordValue).min(1)]))
        .refine((e) => Object.keys(e).length > 0, { message: "name at least one field" }),
      /** Fewest records the file must hold (default 1: an empty list is a failure). */
      "min-records": z.number().int().nonnegative().default(1),
    })
    .strict(),
  z
    .object({
      ...base,
      type: z.literal("threshold"),
      file: z.string(),
      records,
      field: z.string().min(1),
      "<=": z.number().optional(),
      ">=": z.number().optional(),
      "<": z.number().optional(),
      ">": z.number().optional(),
      /**
       * Compare value / baseline value instead of the value itself: a result file, or "history": the
       * median of the default branch's last runs with the same stack (their run records in the store).
       */
      baseline: z.string().optional(),
      /** With baseline: history, how many of the default branch's newest passing runs make the median. */
      "history-runs": z.number().int().positive().max(100).default(5),
      "baseline-records": z.string().optional(),
      key: fieldList.optional(),
    })
    .strict()
    .refine((t) => ["<=", ">=", "<", ">"].filter((op) => t[op as "<="] !== undefined).length === 1, {
      message: 'give exactly one bound: "<=", ">=", "<" or ">"',
    })
    .refine((t) => !t.baseline || t.key, {
      message: "a relative threshold (baseline) needs key fields to match records",
    }),
  z
    .object({
      ...base,
      type: z.literal("allclose"),
      a: z.string(),
      b: z.string(),
      rtol: z.number().nonnegative().default(1e-5),
      atol: z.number().nonnegative().default(1e-8),
      "equal-nan": z.boolean().default(true),
      /**
       * The largest relative L2 error ||a - b|| / ||b|| allowed. atol alone lets a wrong kernel pass when
       * outputs are small; a bound on the whole array's relative error does not.
       */
      "max-norm-error": z.number().positive().optional(),
      /** How to read 2-byte void arrays (ml_dtypes' bfloat16 is saved as '<V2'). */
      dtype: z.enum(["bfloat16"]).optional(),
    })
    .strict(),
  z
    .object({
      ...base,
      type: z.literal("agree"),
      a: z.string(),
      b: z.string(),
      records,
      "b-records": z.string().optional(),
      key: fieldList,
      /** Numeric fields to compare; "x" compares x with x, "x=y" compares a's x with b's y. */
      fields: fieldList,
      rtol: z.number().nonnegative().default(1e-3),
      atol: z.number().nonnegative().default(1e-6),
    })
    .strict(),
  z
    .object({
      ...base,
      type: z.literal("command"),
      run: z.string().min(1),
      workdir: z.string().optional(),
      env: envMap.default({}),
    })
    .strict(),
]);

/** What `kcache compare` compares record by record between cold and warm runs. */
export const compareSchema = z
  .object({
    /** The result file the commands write (relative to the workdir). */
    file: z.string().min(1),
    records: z.string().optional(),
    key: z.array(z.string().min(1)).min(1),
    metrics: z.array(z.string().min(1)).min(1).default(["median_ms"]),
    /** A timing that moved more than this share (0.05 = 5%) between cold and warm is flagged. */
    threshold: z.number().positive().max(10).default(0.05),
  })
  .strict();

/** How `kcache workflow` writes this profile's GitHub Actions workflows. */
export const githubSchema = z
  .object({
    "runs-on": runsOnSchema.default("ubuntu-latest"),
    /** Steps run after checkout, before kcache (installing the library, say). */
    setup: z.array(z.string().min(1)).default([]),
    /** Events that run the job (the default branch's pushes and pull requests by default). */
    on: z.array(z.enum(["pull_request", "push", "workflow_dispatch"])).default(["pull_request", "push"]),
    /**
     * Run pull requests from forks too. Off by default on self-hosted runners: a fork's code would
     * run on your machines (and could read what they hold).
     */
    "fork-pull-requests": z.boolean().default(false),
    /** run: one `kcache run` step; steps: restore, each command as its own step, save after all passed. */
    style: z.enum(["run", "steps"]).default("run"),
    /** The job's timeout; default 90 minutes (GitHub's own is 6 hours). */
    "timeout-minutes": z.number().int().positive().optional(),
    /** Run the job only for pushes and pull requests touching these paths (GitHub's `paths:` filter). */
    paths: z.array(z.string().min(1)).default([]),
    /** The job's container (an image name, or GitHub's image/options/env form), as Ascend CI runs in one. */
    container: containerSchema.optional(),
    prewarm: z
      .object({
        cron: z.string().superRefine((text, ctx) => {
          try {
            parseCron(text);
          } catch (e) {
            if (!(e instanceof CronSyntaxError)) throw e;
            ctx.addIssue({ code: "custom", message: e.message });
          }
        }),
        /** IANA zone for the cron (GitHub's `timezone:`); UTC when absent. Checked here, at load. */
        timezone: z
          .string()
          .superRefine((name, ctx) => {
            const problem = timeZoneProblem(name);
            if (problem) ctx.addIssue({ code: "custom", message: problem });
          })
          .optional(),
        /** Pushes to the default branch touching these paths prewarm (and they are --if-changed's globs). */
        paths: z.array(z.string().min(1)).default([]),
      })
      .strict()
      .optional(),
    /** A job before the GPU job, on pull requests: their changed kernels compiled on a CPU runner. */
    "cpu-prewarm": cpuPrewarmSchema.optional(),
  })
  .strict();

export const profileSchema = z
  .object({
    /** Key prefix of this workload (default: key.prefix). */
    prefix: z
      .string()
      .min(1)
      .max(400)
      .refine((s) => !s.includes(","), {
        message:
          "must not contain a comma (GitHub cache keys cannot): use - or _ instead, e.g. fla-kda-bench",
      })
      .optional(),
    /** Names of the caches this profile restores and saves (default: all). */
    caches: z.array(z.string()).min(1).optional(),
    env: envMap.default({}),
    /**
     * Scripts sourced before anything else (CANN's set_env.sh): their exported environment is the
     * environment of the stack probe, the commands and the checks.
     */
    source: sourceList.default([]),
    workdir: z.string().optional(),
    // A command first: an item that fits neither, and whose keys do not say which, is reported as a
    // command (config/union-branch.ts), the common case.
    commands: z.array(z.union([commandSchema, groupSchema])).min(1),
    checks: z.array(checkSchema).default([]),
    /** Run the remaining commands after one fails (checks and the report always run). */
    "continue-on-error": z.boolean().default(false),
    save: z.enum(["on-success", "never"]).default("on-success"),
    /** warm: after an exact-key restore, compiling any kernel is unexpected. */
    expect: z.enum(["any", "warm"]).default("any"),
    /** What an unexpected compile does: warn, or fail the run (and block the save). */
    "on-unexpected-compile": z.enum(["warn", "fail"]).default("warn"),
    github: githubSchema.optional(),
    compare: compareSchema.optional(),
    ...autotuneFields,
    ...ciFields,
  })
  .strict();

export type CommandSpec = z.output<typeof commandSchema>;
export type GroupSpec = z.output<typeof groupSchema>;
export type CheckSpec = z.output<typeof checkSchema>;
export type ProfileSpec = z.output<typeof profileSchema>;
export type GithubSpec = z.output<typeof githubSchema>;
export type CompareSpec = z.output<typeof compareSchema>;
