import { IntegrityError, StoreError } from "../../errors.js";
import type { CacheKindName } from "../../kinds/kind.js";
import { entryId } from "../../manifest/entry-id.js";
import {
  decodeManifest,
  type EntryRef,
  MANIFEST_FORMAT,
  type Manifest,
  type PackRef,
  type Use,
} from "../../manifest/manifest.js";
import type { WrittenPack } from "../../pack/write/pack-writer.js";
import type { Store } from "../../store/store.js";
import { VERSION } from "../../version.js";
import { type AutotuneParts, recordProducers } from "../autotune/provenance.js";
import type { JobContext } from "../job-context.js";
import { type UsagePlan, usesTable } from "../usage/save-usage.js";
import { deletePacks } from "./save-packs.js";
import type { SavePlan } from "./save-plan.js";
import { type Present, presentId } from "./save-scan.js";

/**
 * The manifest a save commits: the parent's packs it still references (re-indexed), then the packs
 * it wrote, and every entry, sorted. Pure: it reads and writes nothing.
 */
export interface ManifestParts {
  plan: SavePlan;
  /** The manifest saved on top of, and its entries by id. */
  parent: Manifest | null;
  parentRefs: Map<string, EntryRef>;
  written: WrittenPack[];
  /** Each cache's kind as scanned. */
  kinds: Map<string, CacheKindName>;
  /** This save's use, and each entry's last use. */
  usage: Pick<UsagePlan, "now" | "lastUsed">;
  /** The autotune results among the entries, and who this job's were produced by. */
  autotune: AutotuneParts;
}

export function manifestFor(ctx: JobContext, parts: ManifestParts): Manifest {
  const { plan, parent, parentRefs, written, kinds, usage, autotune } = parts;
  const packs: PackRef[] = [];
  const remap = new Map<number, number>();
  const entries: EntryRef[] = [];
  for (const p of plan.stay) {
    const ref = parentRefs.get(presentId(p)) as EntryRef;
    let idx = remap.get(ref.pack);
    if (idx === undefined) {
      idx = packs.length;
      remap.set(ref.pack, idx);
      packs.push(parent?.packs[ref.pack] as PackRef);
    }
    entries.push({ ...ref, pack: idx });
  }
  for (const w of written) {
    const idx = packs.length;
    packs.push({
      object: w.object,
      sha256: w.sha256,
      size: w.size,
      entryBytes: w.entryBytes,
      entries: w.entries.length,
      savedBy: ctx.key,
    });
    for (const e of w.entries) entries.push({ ...e, pack: idx });
  }
  entries.sort((a, b) => (entryId(a) < entryId(b) ? -1 : 1));
  const uses: Use[] = [];
  for (const e of entries) {
    const last = usage.lastUsed.get(entryId(e)) ?? usage.now;
    e.usedIn = last.generation;
    uses.push(last);
  }
  const tunings = recordProducers(entries, parent, parentRefs, autotune);
  const createdAt = new Date().toISOString();
  return {
    format: MANIFEST_FORMAT,
    key: ctx.key,
    prefix: ctx.prefix,
    stackId: ctx.stack.stackId,
    stack: ctx.stack.components,
    revision: ctx.revision,
    scope: ctx.scopes.write,
    createdAt,
    producer: `kcache ${VERSION}`,
    parent: plan.consolidate && plan.stay.length === 0 ? null : (parent?.key ?? null),
    caches: ctx.caches
      .filter((c) => kinds.has(c.name))
      .map((c) => ({ name: c.name, kind: kinds.get(c.name) as CacheKindName })),
    packs,
    entries,
    generation: usage.now.generation,
    // A use a clock ahead of ours dated later than now is a use now: no listed use may follow the
    // manifest's own creation (manifest.ts refuses one that does).
    uses: usesTable(uses).map((u) =>
      Date.parse(u.at) > Date.parse(createdAt) ? { ...u, at: createdAt } : u,
    ),
    ...(tunings.length ? { tunings } : {}),
  };
}

/** Entries of `present` now saved under the manifest, each with the digest it was saved with. */
export function savedEntries(present: Present[], manifest: Manifest): Present[] {
  const digests = new Map(manifest.entries.map((e) => [entryId(e), e.sha256]));
  const out: Present[] = [];
  for (const p of present) {
    const d = digests.get(presentId(p));
    if (d === undefined) continue;
    p.digest ??= d;
    out.push(p);
  }
  return out;
}

/**
 * The commit phase: creates the manifest object only if no other saver did, and reads it back.
 * "lost-race" when another run's manifest stands under this key; a store that acknowledges writes it
 * does not keep is a fault (StoreError).
 */
export async function commitManifest(
  store: Store,
  object: string,
  body: Buffer,
): Promise<"committed" | "lost-race-before" | "lost-race-after"> {
  if (!(await store.createIfAbsent(object, body))) {
    // "Exists" may be our own write: a PUT the server stored whose answer was lost is retried by the
    // SDK and refused for the object it wrote itself (DESIGN.md, S3 conditional writes). Only other
    // bytes under the key are another run's; a manifest names its creation time, so two saves differ.
    const stored = await store.read(object);
    if (stored?.equals(body)) return "committed";
    // A store that answers "exists" to everything must not pass for a lost race.
    if (!(await existingManifest(store, object)))
      throw new StoreError(`${store.description}: refused to create ${object} but holds no such manifest`);
    return "lost-race-before";
  }
  // Where creating cannot replace another writer's object (a link, GitHub's reservation), it is ours.
  if (store.capabilities.atomicCreate) return "committed";
  // Read back: on a server that ignores If-None-Match another saver's manifest may have replaced ours
  // (then its save stands). A read that fails leaves the key standing as written: either manifest is
  // whole, and the save is not reported as failed for a check after it.
  let stored: Buffer | null;
  try {
    stored = await store.read(object);
  } catch {
    return "committed";
  }
  if (!stored?.equals(body)) {
    if (await existingManifest(store, object)) return "lost-race-after";
    throw new StoreError(`${store.description}: ${object} does not read back as written`);
  }
  return "committed";
}

/**
 * Whether a valid manifest is stored at `object`. One that is there but does not verify (damaged, or
 * a store answering garbage) is a data fault, never taken for "the key exists".
 */
export async function existingManifest(store: Store, object: string): Promise<boolean> {
  return (await storedManifest(store, object)) !== null;
}

/** The manifest stored at `object`, or null; one that does not verify throws, as existingManifest says. */
export async function storedManifest(store: Store, object: string): Promise<Manifest | null> {
  const data = await store.read(object);
  if (!data) return null;
  try {
    return decodeManifest(data, object);
  } catch (e) {
    if (!(e instanceof IntegrityError)) throw e;
    throw new IntegrityError(
      `${store.description}: ${e.message}; nothing saved (delete the object, or check the store's endpoint)`,
    );
  }
}

/**
 * Deletes, of the packs a save that lost its key wrote, those the manifest stored at `object` does
 * not name (no save deletes an object a stored manifest names). Where the manifest cannot be read,
 * none: an unreferenced pack costs storage until a prune, a deleted one a key.
 */
export async function deleteUnnamed(store: Store, object: string, written: WrittenPack[]): Promise<void> {
  let named: Set<string>;
  try {
    named = new Set((await storedManifest(store, object))?.packs.map((p) => p.object) ?? []);
  } catch {
    return;
  }
  await deletePacks(
    store,
    written.filter((w) => !named.has(w.object)),
  );
}
