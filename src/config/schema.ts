import { z } from "zod";
import { profileSchema } from "./profile-schema.js";

/** A cache prefix or restore prefix: GitHub's key rules (no commas) plus a sane length. */
const keyPart = z
  .string()
  .min(1)
  .max(400)
  .refine((s) => !s.includes(","), { message: "must not contain a comma (GitHub cache keys cannot)" });

const cacheName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, { message: "use letters, digits, '.', '_' and '-' only" });

export const cacheSchema = z
  .object({
    name: cacheName,
    kind: z.enum(["triton", "dir"]),
    path: z.string().min(1),
    /** Environment variable that points the job at this cache (TRITON_CACHE_DIR for a triton cache). */
    env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional(),
  })
  .strict();

export const storeSchema = z
  .object({
    type: z.literal("local").default("local"),
    path: z.string().min(1).optional(),
  })
  .strict();

export const keySchema = z
  .object({
    prefix: keyPart.default("kcache"),
    "restore-prefixes": z.array(keyPart).default([]),
    "default-branch": z.string().min(1).optional(),
  })
  .strict();

export const saveSchema = z
  .object({
    /** Consolidate into one pack when a manifest would reference more packs than this. */
    "max-chain": z.number().int().min(1).max(1000).default(8),
    /** Consolidate when this share of the referenced packs' bytes belongs to entries no longer used. */
    "max-dead-share": z.number().min(0).max(1).default(0.5),
    /** Split a save's new entries into packs of about this many uncompressed MiB (restore runs them in parallel). */
    "pack-mib": z.number().int().min(1).max(65536).default(256),
    "compression-level": z.number().int().min(1).max(19).default(3),
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
    store: storeSchema.default({ type: "local" }),
    key: keySchema.default({ prefix: "kcache", "restore-prefixes": [] }),
    save: saveSchema.default({
      "max-chain": 8,
      "max-dead-share": 0.5,
      "pack-mib": 256,
      "compression-level": 3,
    }),
    stack: stackSchema.default({ python: "python3", pins: {} }),
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
