import * as z from "zod";
import { CACHE_KIND_NAMES } from "../kinds/kind.js";
import { parseDuration, parseSize } from "./durations.js";
import { keyPartProblem, scopeProblem } from "./key-part.js";
import { clashingProfiles } from "./profile-id.js";
import { profileSchema } from "./profile-schema.js";

/** A cache prefix or restore prefix (and the action's key input): key-part.ts's rules. */
export const keyPart = z
  .string()
  .min(1)
  .superRefine((s, ctx) => {
    const problem = s.length > 0 ? keyPartProblem(s) : null;
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

const cacheName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, { message: "use letters, digits, '.', '_' and '-' only" });

/** A size as "20GB", "512MiB" or a number of bytes; positive. */
export const sizeSchema = z.union([z.number().int().positive(), z.string()]).transform((v, c) => {
  const bytes = typeof v === "number" ? v : parseSize(v);
  if (bytes === null || bytes <= 0) {
    c.addIssue({ code: "custom", message: `"${v}" is not a size: write 20GB, 512MiB or a number of bytes` });
    return z.NEVER;
  }
  return bytes;
});

export const cacheSchema = z
  .object({
    name: cacheName,
    kind: z.enum(CACHE_KIND_NAMES),
    path: z.string().min(1),
    /** Environment variable that points the job at this cache (TRITON_CACHE_DIR for a triton cache). */
    env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional(),
    /** Upload entries the folder held before the job that the restored key lacks (docs/self-hosted.md). */
    "trust-local": z.boolean().default(false),
    /** Run the job in a folder of its own, merged back only after a trusted job passed (docs/self-hosted.md). */
    isolate: z.boolean().default(false),
    /** The most the folder keeps between jobs ("20GB"); least recently used entries are trimmed first. */
    "max-size": sizeSchema.optional(),
    /**
     * eager: a restore places every entry of the key before the job; lazy: only those recent jobs
     * used, the rest fetched one by one when the job looks them up (Triton caches; docs/concepts.md).
     */
    restore: z.enum(["eager", "lazy"]).default("eager"),
  })
  .strict();

const duration = z
  .string()
  .refine((v) => parseDuration(v) !== null, { message: "use a number and a unit, like 10s or 2m" });

export const localStoreSchema = z
  .object({
    /** A store without a type is a local folder. */
    type: z.literal("local").default("local"),
    path: z.string().min(1).optional(),
    /** Each entry a job compiles is shared at once, before any save (docs/concepts.md, "Live sharing"). */
    live: z.boolean().default(false),
    /** Restore, never write: no pack, manifest, run record or live object (docs/configuration.md, store). */
    "read-only": z.boolean().optional(),
  })
  .strict();

export const s3StoreSchema = z
  .object({
    type: z.literal("s3"),
    bucket: z.string().min(3).max(63),
    /** Prepended to every object name, e.g. "ci/kcache/". */
    prefix: z.string().default(""),
    region: z.string().min(1).optional(),
    /** Checked as a URL once ${VAR} is expanded (config/store-config.ts). */
    endpoint: z.string().min(1).optional(),
    // Unset settings take the backend's defaults (DEFAULT_S3 in store/s3-settings.ts, merged by its s3Settings), kept in that one place.
    "path-style": z.boolean().optional(),
    "conditional-writes": z.enum(["auto", "always", "never"]).optional(),
    checksums: z.enum(["when-supported", "when-required"]).optional(),
    "connect-timeout": duration.optional(),
    "idle-timeout": duration.optional(),
    retries: z.number().int().min(0).max(10).optional(),
    /** Each entry a job compiles is shared at once, before any save (docs/concepts.md, "Live sharing"). */
    live: z.boolean().default(false),
    /** Restore, never write: no pack, manifest, run record or live object (docs/configuration.md, store). */
    "read-only": z.boolean().optional(),
  })
  .strict();

export const ghaStoreSchema = z
  .object({
    type: z.literal("gha"),
    /** A download or upload that takes longer fails (the job goes on without the cache). */
    timeout: duration.optional(),
    /** A call or transfer that makes no progress this long fails as stalled (default 60 s). */
    "idle-timeout": duration.optional(),
    /** Refused (config/store-config.ts): GitHub's cache takes 200 uploads a minute per repository. */
    live: z.boolean().optional(),
    /** Restore, never write: no pack, manifest, run record or live object (docs/configuration.md, store). */
    "read-only": z.boolean().optional(),
  })
  .strict();

/**
 * A plain union, not one discriminated by type: a local store's type may be left out, and an error
 * is then reported for the store the user's keys say they meant (config/union-branch.ts).
 */
export const storeSchema = z.union([localStoreSchema, s3StoreSchema, ghaStoreSchema]);
export type StoreSpec = z.output<typeof storeSchema>;

export const keySchema = z
  .object({
    prefix: keyPart.default("kcache"),
    "restore-prefixes": z.array(keyPart).default([]),
    "default-branch": z.string().min(1).optional(),
    /**
     * This build's scope, declared where its CI cannot say (docs/other-ci.md): taken only where no
     * fact contradicts it (keys/scope.ts).
     */
    scope: z
      .string()
      .superRefine((s, ctx) => {
        const problem = scopeProblem(s);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      })
      .optional(),
  })
  .strict();

/**
 * save.keep-unused's defaults: an entry survives 4 saves unused and is dropped at the 5th, so a key
 * carries about 4 commits' worth of dead kernels (1.2x the working set at 5% churn) and a kernel a
 * job uses once every 5 runs never compiles again; 30 days bounds prefixes that save rarely.
 */
export const KEEP_UNUSED_RUNS = 5;
export const KEEP_UNUSED_DAYS = 30;

export const saveSchema = z
  .object({
    /** Consolidate into one pack when a manifest would reference more packs than this. */
    "max-chain": z.number().int().min(1).max(1000).default(8),
    /** Consolidate when this share of the referenced packs' bytes belongs to entries no longer used. */
    "max-dead-share": z.number().min(0).max(1).default(0.5),
    /** Split a save's new entries into packs of about this many uncompressed MiB (restore runs them in parallel). */
    "pack-mib": z.number().int().min(1).max(65536).default(64),
    "compression-level": z.number().int().min(1).max(19).default(3),
    /**
     * Eviction by use: an entry no job used for `runs` saves in a row, or for `days` days, is dropped
     * from the key (0 turns a rule off). docs/concepts.md says why these defaults.
     */
    "keep-unused": z
      .object({
        runs: z.number().int().min(0).max(100000).default(KEEP_UNUSED_RUNS),
        days: z.number().min(0).max(36500).default(KEEP_UNUSED_DAYS),
      })
      .strict()
      .default({ runs: KEEP_UNUSED_RUNS, days: KEEP_UNUSED_DAYS }),
    /** The most a key holds ("20GB", "512MiB" or bytes); least recently used entries go first. */
    "max-bytes": sizeSchema.optional(),
  })
  .strict();

export const stackSchema = z
  .object({
    /** The interpreter whose packages make up the stack. */
    python: z.string().min(1).default("python3"),
    /** Values that are part of the key: probed names (torch, triton, cuda, ...) are compared with the probe. */
    pins: z.record(z.string(), z.union([z.string(), z.number()]).transform(String)).default({}),
  })
  .strict();

export const configSchema = z
  .object({
    version: z.literal(1).default(1),
    caches: z
      .array(cacheSchema)
      .min(1, { message: "list at least one cache, each with name, kind and path" }),
    store: storeSchema.optional(),
    key: keySchema.default({ prefix: "kcache", "restore-prefixes": [] }),
    save: saveSchema.default({
      "max-chain": 8,
      "max-dead-share": 0.5,
      "pack-mib": 64,
      "compression-level": 3,
      "keep-unused": { runs: KEEP_UNUSED_RUNS, days: KEEP_UNUSED_DAYS },
    }),
    stack: stackSchema.default({ python: "python3", pins: {} }),
    /** The kcache action generated workflows use. */
    github: z
      .object({
        action: z
          .string()
          .regex(/^[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[\w./-]+$/, { message: "write owner/repo@ref" })
          .default("kcache/kcache@v0"),
      })
      .strict()
      .default({ action: "kcache/kcache@v0" }),
    /** Named jobs for `kcache run --profile <name>`. */
    profiles: z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/), profileSchema).default({}),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    const seen = new Set<string>();
    cfg.caches.forEach((c, i) => {
      if (seen.has(c.name)) {
        ctx.addIssue({
          code: "custom",
          path: ["caches", i, "name"],
          message: `duplicate cache name "${c.name}"; give each cache its own name`,
        });
      }
      seen.add(c.name);
    });
    for (const [a, b, taken] of clashingProfiles(Object.keys(cfg.profiles)))
      ctx.addIssue({
        code: "custom",
        path: ["profiles", b],
        message: `profiles "${a}" and "${b}" would name the same CI files, jobs or concurrency group (kcache-${taken}: "." is written "-", and GitHub compares groups in any case); rename one`,
      });
    for (const [name, p] of Object.entries(cfg.profiles)) {
      (p.caches ?? []).forEach((c, i) => {
        if (!seen.has(c)) {
          ctx.addIssue({
            code: "custom",
            path: ["profiles", name, "caches", i],
            message: `no cache named "${c}"; use one of ${[...seen].map((s) => `"${s}"`).join(", ")}`,
          });
        }
      });
    }
  });

export type RawConfig = z.input<typeof configSchema>;
export type ParsedConfig = z.output<typeof configSchema>;
