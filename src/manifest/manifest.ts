import { createHash } from "node:crypto";
import * as z from "zod";
import { IntegrityError } from "../errors.js";
import { CACHE_KIND_NAMES } from "../kinds/kind.js";

export const MANIFEST_FORMAT = "kcache-manifest/1";

/** At most this many uses a manifest may list (each is some entry's last use, so never more than its entries). */
export const MAX_USES = 10_000;

function refSchemas() {
  const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

  const packRefSchema = z.object({
    /** Store object name of the pack. */
    object: z.string().min(1),
    sha256,
    /** Compressed bytes. */
    size: z.number().int().nonnegative(),
    /** Uncompressed bytes of all entries the pack holds, live or not. */
    entryBytes: z.number().int().nonnegative(),
    entries: z.number().int().nonnegative(),
    /** Key of the save that wrote the pack; packs of one save count once in the chain length. */
    savedBy: z.string(),
  });

  const entryRefSchema = z.object({
    cache: z.string().min(1),
    name: z.string().min(1),
    sha256,
    /** Uncompressed bytes of the entry's files. */
    size: z.number().int().nonnegative(),
    files: z.number().int().positive(),
    /** Index into `packs`. */
    pack: z.number().int().nonnegative(),
    /**
     * Where the entry's own zstd frames lie in its pack, [offset, bytes]: read alone by a ranged
     * request (a lazy restore). Absent: the entry is read with its whole pack. Readers before it
     * ignore it.
     */
    frame: z.tuple([z.number().int().nonnegative(), z.number().int().positive()]).optional(),
    /**
     * The generation of the save at which a job last used the entry (`uses` has its revision and time);
     * carried over from the parent while unused. Absent in manifests written before usage was recorded.
     */
    usedIn: z.number().int().nonnegative().optional(),
    /** An autotune result's producer: the `id` of one of the manifest's `tunings`. Absent: unknown. */
    tunedBy: z.number().int().nonnegative().optional(),
    /**
     * An autotune result's salt: the sources that can change a winner without changing Triton's key
     * (the Python package of the kernel's module), as paths relative to the job's folder, and their digest.
     */
    salt: z
      .object({ paths: z.array(z.string().min(1).max(512)).min(1).max(64), digest: sha256 })
      .strict()
      .optional(),
  });

  return { packRefSchema, entryRefSchema };
}

function recordSchemas() {
  const isoTime = z
    .string()
    .max(64)
    .refine((s) => !Number.isNaN(Date.parse(s)), { message: "not a date" });

  /**
   * Who produced autotune results (docs/benchmarks.md): the profile, whether it is a benchmark's, the
   * device model as the driver names it, the values of the variables that shape timing, the revision
   * and time of the run. Bounded: a manifest is refused as damaged past these sizes.
   */
  const tuningSchema = z
    .object({
      id: z.number().int().nonnegative(),
      profile: z.string().max(128),
      benchmark: z.boolean(),
      device: z.string().max(256),
      env: z
        .record(z.string().min(1).max(128), z.string().max(1024))
        .refine((e) => Object.keys(e).length <= 32, { message: "more than 32 variables" }),
      revision: z.string().max(200),
      at: isoTime,
    })
    .strict();

  /** A save some entry was last used at: its generation in the key's chain, revision and time. */
  const useSchema = z
    .object({
      generation: z.number().int().nonnegative(),
      revision: z.string().max(200),
      at: isoTime,
    })
    .strict();

  return { tuningSchema, useSchema };
}

function buildSchemas() {
  const { packRefSchema, entryRefSchema } = refSchemas();
  const { tuningSchema, useSchema } = recordSchemas();
  const manifestSchema = z.object({
    format: z.literal(MANIFEST_FORMAT),
    key: z.string().min(1),
    prefix: z.string(),
    stackId: z.string(),
    stack: z.record(z.string(), z.string()),
    revision: z.string(),
    scope: z.string(),
    createdAt: z.string(),
    producer: z.string(),
    /** Key of the manifest this one was saved on top of (delta save), if any. */
    parent: z.string().nullable(),
    caches: z.array(z.object({ name: z.string(), kind: z.enum(CACHE_KIND_NAMES) })),
    packs: z.array(packRefSchema),
    entries: z.array(entryRefSchema),
    /** This save's number in its chain of saves (the parent's plus one); absent before usage was recorded. */
    generation: z.number().int().nonnegative().optional(),
    /** The saves the entries were last used at, each once (entries' `usedIn` point here). */
    uses: z.array(useSchema).max(MAX_USES).optional(),
    /** The producers of the autotune results among the entries (entries' `tunedBy` point here). */
    tunings: z.array(tuningSchema).max(1000).optional(),
  });
  return { packRefSchema, entryRefSchema, tuningSchema, useSchema, manifestSchema };
}

/**
 * The manifest's schemas, built on first use: zod builds a schema's parser when it is declared, and
 * a command that never reads a manifest (a key, a miss) should not pay for it.
 */
let schemas: ReturnType<typeof buildSchemas> | undefined;
const manifestSchemas = () => {
  if (!schemas) {
    // A command parses one manifest or a few: zod's generated fast path costs more to build than it
    // saves (a 220-entry manifest's first parse: ~20 ms jitless, ~40 ms with it).
    z.config({ jitless: true });
    schemas = buildSchemas();
  }
  return schemas;
};
type Schemas = ReturnType<typeof buildSchemas>;

export type Manifest = z.infer<Schemas["manifestSchema"]>;
export type PackRef = z.infer<Schemas["packRefSchema"]>;
export type EntryRef = z.infer<Schemas["entryRefSchema"]>;
export type Use = z.infer<Schemas["useSchema"]>;
export type Tuning = z.infer<Schemas["tuningSchema"]>;

/**
 * Serialises a manifest with an integrity line: the body's sha256, so a flipped byte that still
 * parses as JSON is caught as surely as a truncated file.
 */
export function encodeManifest(m: Manifest): Buffer {
  const body = JSON.stringify(m, null, 1);
  const digest = createHash("sha256").update(body).digest("hex");
  return Buffer.from(`${JSON.stringify({ integrity: `sha256:${digest}` })}\n${body}\n`);
}

/** Parses and verifies a stored manifest; throws IntegrityError naming `where` when it is damaged. */
export function decodeManifest(data: Buffer, where: string): Manifest {
  const text = data.toString("utf8");
  const nl = text.indexOf("\n");
  if (nl < 0) throw new IntegrityError(`${where}: manifest is truncated (no integrity line)`);
  let integrity: unknown;
  try {
    integrity = (JSON.parse(text.slice(0, nl)) as { integrity?: unknown }).integrity;
  } catch {
    throw new IntegrityError(`${where}: manifest's integrity line does not parse`);
  }
  const body = text.slice(nl + 1).replace(/\n$/, "");
  const digest = createHash("sha256").update(body).digest("hex");
  if (integrity !== `sha256:${digest}`) {
    throw new IntegrityError(`${where}: manifest digest mismatch (damaged or edited)`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new IntegrityError(`${where}: manifest body does not parse`);
  }
  const r = manifestSchemas().manifestSchema.safeParse(parsed);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new IntegrityError(`${where}: manifest field ${issue?.path.join(".")}: ${issue?.message}`);
  }
  checkUses(r.data, where);
  const seen = new Set<string>();
  const generation = r.data.generation ?? 0;
  const uses = new Set((r.data.uses ?? []).map((u) => u.generation));
  const tunings = new Set((r.data.tunings ?? []).map((t) => t.id));
  if (tunings.size !== (r.data.tunings ?? []).length)
    throw new IntegrityError(`${where}: manifest lists an autotune producer twice (a damaged manifest)`);
  for (const e of r.data.entries) {
    // An entry listed twice would be restored and counted twice: the manifest is damaged.
    const id = `${e.cache}/${e.name}`;
    if (seen.has(id)) throw new IntegrityError(`${where}: entry ${id} is listed twice (a damaged manifest)`);
    seen.add(id);
    if (e.pack >= r.data.packs.length) {
      throw new IntegrityError(
        `${where}: entry ${e.cache}/${e.name} points at pack ${e.pack}, which is not listed`,
      );
    }
    // A frame past its pack's end would be a read the manifest cannot bound.
    const pack = r.data.packs[e.pack];
    if (e.frame && pack && e.frame[0] + e.frame[1] > pack.size)
      throw new IntegrityError(
        `${where}: entry ${e.cache}/${e.name} lies at bytes ${e.frame[0]}+${e.frame[1]}, past its pack's ${pack.size} (a damaged manifest)`,
      );
    // A producer the manifest does not list would pass for whatever a pinned restore wants.
    if (e.tunedBy !== undefined && !tunings.has(e.tunedBy))
      throw new IntegrityError(
        `${where}: entry ${e.cache}/${e.name} names autotune producer ${e.tunedBy}, which the manifest does not list`,
      );
    // A use after this save, or one the manifest does not list, is a lie eviction would act on.
    if (e.usedIn !== undefined && (e.usedIn > generation || !uses.has(e.usedIn))) {
      throw new IntegrityError(
        `${where}: entry ${e.cache}/${e.name} was last used at save ${e.usedIn}, which the manifest does not list`,
      );
    }
  }
  return r.data;
}

/**
 * A manifest's record of use is data eviction acts on, so it is checked as data: the saves it lists
 * are unique and in order, none after the manifest's own save (by generation or by date), each the
 * last use of some entry. A manifest that breaks any of these is damaged (a fault, never an eviction).
 */
function checkUses(m: Manifest, where: string): void {
  if (!m.uses?.length) return;
  const fail = (why: string) => {
    throw new IntegrityError(`${where}: manifest's record of use ${why} (a damaged or forged manifest)`);
  };
  const created = Date.parse(m.createdAt);
  if (Number.isNaN(created)) fail("comes with a creation time that is not a date");
  if (m.generation === undefined) fail("lists saves but the manifest has no generation");
  let previous = -1;
  for (const u of m.uses) {
    if (u.generation <= previous) fail(`lists save ${u.generation} out of order or twice`);
    if (u.generation > (m.generation as number))
      fail(`lists save ${u.generation}, after its own (${m.generation})`);
    if (Date.parse(u.at) > created) fail(`dates save ${u.generation} ${u.at}, after the manifest's creation`);
    previous = u.generation;
  }
  const referenced = new Set(m.entries.map((e) => e.usedIn));
  const idle = m.uses.find((u) => !referenced.has(u.generation));
  if (idle) fail(`lists save ${idle.generation}, which is no entry's last use`);
}
