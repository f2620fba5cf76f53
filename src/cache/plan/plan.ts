import path from "node:path";
import * as z from "zod";
import { IntegrityError } from "../../errors.js";

/**
 * A compile plan (docs/cpu-prewarm.md): for each kernel a job compiled or loaded, what Triton needs to
 * compile it again with no GPU, as kcache's hook recorded it (python/kcache_hook/_kcache_plan.py), its
 * source file relative to the checkout. Saved with the key (plans/<scope>/<key>.json) and read back by
 * `kcache prewarm --cpu`, as data a job wrote: bounded, shape-checked, and refused whole when an entry
 * names a file outside the checkout.
 */
export const PLAN_FORMAT = "kcache-plan/1";
/** The most entries a plan holds (FLA's whole test matrix compiles a few thousand). */
export const MAX_PLAN_ENTRIES = 50_000;
/** The most bytes one entry may take as JSON (FLA's take about 1.5 KB). */
export const MAX_ENTRY_BYTES = 64 * 1024;
/** The most bytes a stored plan may take. */
export const MAX_PLAN_BYTES = 64 * 1024 * 1024;
/** The deepest an entry's values nest (FLA's go 5 deep): deeper is refused before anything recurses over it. */
export const MAX_ENTRY_DEPTH = 32;

/** Whether `v` nests deeper than `max` arrays and objects, found without recursion (a stack would overflow). */
function tooDeep(v: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[v, 0]];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const [x, d] = item;
    if (x === null || typeof x !== "object") continue;
    if (d >= max) return true;
    for (const c of Object.values(x)) pending.push([c, d + 1]);
  }
  return false;
}

/** An entry's size as JSON; null when it nests too deep to write down (or to be read by the worker's Python). */
function entryBytes(e: unknown): number | null {
  return tooDeep(e, MAX_ENTRY_DEPTH) ? null : JSON.stringify(e).length;
}

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
/** A Triton value as the hook encodes it; its size is bounded by the entry's. */
const value = z.unknown();

/** What Triton compiles for: backend (cuda, hip; npu for Triton-Ascend), arch, warp size. */
const targetSchema = z.tuple([
  z.string().regex(/^[a-z][a-z0-9_]{0,31}$/),
  z.union([z.number().int().nonnegative(), z.string().max(64)]),
  z.number().int().nonnegative(),
]);

const entrySchema = z
  .object({
    module: z
      .string()
      .max(256)
      .regex(/^[A-Za-z_][A-Za-z0-9_.]*$/),
    qualname: z
      .string()
      .max(256)
      .regex(/^[A-Za-z_<][A-Za-z0-9_.<>]*$/),
    name: z.string().max(256).nullable(),
    /** The source file, relative to the checkout, in POSIX form. */
    file: z.string().min(1).max(512),
    /** Triton's JITFunction.cache_key when recorded: its source, callees and constexpr globals. */
    fnKey: hex64,
    /** The kernel's cache key (its entry folder's name, before base32). */
    hash: hex64,
    target: targetSchema,
    signature: z.record(z.string().max(256), value),
    constexprs: z.array(z.tuple([z.array(z.number().int().nonnegative()).max(16), value])).max(4096),
    attrs: z.array(z.tuple([z.array(z.number().int().nonnegative()).max(16), value])).max(4096),
    options: z.record(z.string().max(128), value),
    /** The variables Triton's cache key read (the worker sets only those its Triton says it reads). */
    env: z.record(
      z.string().regex(/^[A-Z_][A-Z0-9_]{0,127}$/),
      z
        .string()
        .max(4096)
        .regex(/^[^\0\n\r]*$/),
    ),
    triton: z.string().max(64).nullable(),
  })
  .strict();

export type PlanEntry = z.infer<typeof entrySchema>;

/** What the GPU job's device told a library at import; shown to it again by the prewarm's workers. */
const deviceSchema = z
  .object({
    target: targetSchema,
    torch: z
      .object({
        name: z.string().max(256),
        capability: z.array(z.number().int()).max(4),
        count: z.number().int().nonnegative(),
        properties: z.record(z.string().max(128), z.union([z.string().max(1024), z.number(), z.boolean()])),
      })
      .optional(),
    triton: z
      .record(z.string().max(128), z.union([z.string().max(1024), z.number(), z.boolean()]))
      .optional(),
  })
  .strict();

export type DeviceFacts = z.infer<typeof deviceSchema>;

/** What a CPU prewarm compiled ahead for a key, so the GPU job's report can say what it got from it. */
const prewarmedSchema = z
  .object({
    revision: z.string().max(200),
    at: z.string().max(64),
    base: z.string().max(1024),
    compiled: z.array(hex64).max(MAX_PLAN_ENTRIES),
    failed: z.array(z.object({ name: z.string().max(512), why: z.string().max(2000) }).strict()).max(1000),
    unchanged: z.number().int().nonnegative(),
  })
  .strict();

export type Prewarmed = z.infer<typeof prewarmedSchema>;

const planSchema = z
  .object({
    format: z.literal(PLAN_FORMAT),
    key: z.string().max(1024),
    scope: z.string().max(1024),
    revision: z.string().max(200),
    createdAt: z.string().max(64),
    device: deviceSchema.nullable(),
    entries: z.array(entrySchema).max(MAX_PLAN_ENTRIES),
    prewarmed: prewarmedSchema.optional(),
  })
  .strict();

export type Plan = z.infer<typeof planSchema>;

/** A checkout-relative POSIX path that stays inside the checkout, or null. */
export function insideCheckout(file: string): string | null {
  if (file.includes("\0") || file.includes("\\") || path.posix.isAbsolute(file)) return null;
  const norm = path.posix.normalize(file);
  if (norm === "." || norm.startsWith("../") || norm === ".." || norm !== file) return null;
  return norm.endsWith(".py") ? norm : null;
}

/** Reads a stored plan: JSON of the right shape, every file inside the checkout; an IntegrityError otherwise. */
export function decodePlan(data: Buffer, object: string): Plan {
  if (data.length > MAX_PLAN_BYTES)
    throw new IntegrityError(`plan ${object} is ${data.length} bytes, over ${MAX_PLAN_BYTES}: refused`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString("utf8"));
  } catch {
    throw new IntegrityError(`plan ${object} is not JSON: refused`);
  }
  const r = planSchema.safeParse(parsed);
  if (!r.success) {
    const issue = r.error.issues[0];
    // The path and message hold the plan's own keys: written as JSON strings, never as lines of their own.
    const where = issue?.path.map((p) => (typeof p === "string" ? JSON.stringify(p) : String(p))).join(".");
    throw new IntegrityError(
      `plan ${object} is damaged at ${where || "its top"}: ${JSON.stringify(issue?.message ?? "").slice(1, -1)}; refused`,
    );
  }
  r.data.entries.forEach((e, i) => {
    if (insideCheckout(e.file) === null)
      throw new IntegrityError(
        `plan ${object}: entry ${i} (${e.module}.${e.qualname}) names ${JSON.stringify(e.file)}, which is not a Python file inside the checkout; the plan is refused (a prewarm imports only the checkout's own modules)`,
      );
    const bytes = entryBytes(e);
    if (bytes === null || bytes > MAX_ENTRY_BYTES)
      throw new IntegrityError(
        `plan ${object}: entry ${i} is ${bytes === null ? `nested over ${MAX_ENTRY_DEPTH} deep` : `over ${MAX_ENTRY_BYTES} bytes`}; refused`,
      );
  });
  return r.data;
}

export function encodePlan(plan: Plan): Buffer {
  return Buffer.from(JSON.stringify(plan));
}

/** What a job's hook recorded, made into plan entries relative to `root` (the checkout). */
export interface RecordedPlan {
  entries: PlanEntry[];
  device: DeviceFacts | null;
  /** Kernels whose source lies outside the checkout (Inductor's generated ones, installed packages'). */
  outside: string[];
  /** Kernels the hook could not record, each with why (a constexpr of a type it cannot write down). */
  unplannable: string[];
}

/** Turns the hook's plan lines (untrusted: a job wrote them) into entries; lines of the wrong shape are dropped. */
export function recordedPlan(lines: unknown[], devices: unknown[], root: string): RecordedPlan {
  const out: RecordedPlan = { entries: [], device: null, outside: [], unplannable: [] };
  const seen = new Set<string>();
  const rootReal = path.resolve(root);
  for (const line of lines) {
    if (!line || typeof line !== "object") continue;
    const raw = line as Record<string, unknown>;
    const label = `${String(raw.module)}.${String(raw.qualname)}`.slice(0, 300);
    if (typeof raw.unplannable === "string") {
      if (out.unplannable.length < 100) out.unplannable.push(`${label}: ${raw.unplannable.slice(0, 300)}`);
      continue;
    }
    if (typeof raw.file !== "string") continue;
    const rel = path.relative(rootReal, path.resolve(raw.file)).split(path.sep).join("/");
    if (insideCheckout(rel) === null) {
      if (!out.outside.includes(label) && out.outside.length < 100) out.outside.push(label);
      continue;
    }
    const { v: _v, unplannable: _u, ...rest } = raw;
    const r = entrySchema.safeParse({ ...rest, file: rel });
    if (!r.success || seen.has(r.data.hash)) continue;
    const bytes = entryBytes(r.data);
    if (bytes === null || bytes > MAX_ENTRY_BYTES) continue;
    seen.add(r.data.hash);
    out.entries.push(r.data);
    if (out.entries.length >= MAX_PLAN_ENTRIES) break;
  }
  for (const d of devices) {
    const r = deviceSchema.safeParse(d);
    if (r.success && (out.device === null || (r.data.torch && !out.device.torch))) out.device = r.data;
  }
  return out;
}

/**
 * A key's plan: this job's entries first, then the parent key's that this job did not record (a warm
 * job loads only the winners of its autotuned kernels; the cold one before it recorded every config),
 * each kernel once, at most MAX_PLAN_ENTRIES. A parent's entry this job recorded again with another
 * source (the same function and specialization, another fnKey) is superseded and left out.
 */
export function mergedEntries(own: PlanEntry[], parent: PlanEntry[]): PlanEntry[] {
  const seen = new Set(own.map((e) => e.hash));
  const specs = new Set(own.map(specializationOf));
  const out = [...own];
  for (const e of parent) {
    if (out.length >= MAX_PLAN_ENTRIES) break;
    if (!seen.has(e.hash) && !specs.has(specializationOf(e))) {
      seen.add(e.hash);
      out.push(e);
    }
  }
  return out;
}

/** A kernel's function and specialization, whatever its source: what one compile of it is for. */
function specializationOf(e: PlanEntry): string {
  const { file, qualname, signature, constexprs, attrs, options, target, env } = e;
  return JSON.stringify([file, qualname, signature, constexprs, attrs, options, target, env]);
}
