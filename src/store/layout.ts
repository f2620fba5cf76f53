/**
 * Where things live in a store. Scopes and keys are percent-encoded into single name parts, so a
 * branch called "a/b" cannot reach into another scope and prefix listing stays one level deep.
 */
export const MANIFESTS = "manifests";
export const PACKS = "packs";
/** Saves in flight name the packs they reuse here; prune spares them (see cache/pack-lease.ts). */
export const LEASES = "leases";
/** One record per `kcache run`, beside the caches (src/history/run-record.ts). */
export const RUNS = "runs";
/** Packs prune found unreferenced; a save never reuses a condemned pack. */
export const CONDEMNED = "condemned";

/** Entries shared as jobs compile them (store.live), each alone, before any save. */
export const LIVE = "live";

const enc = (s: string) => encodeURIComponent(s);

/**
 * A name part read back from the store, or null where it is not one kcache encoded (a malformed
 * escape, as any writer of the store can leave): such an object is no kcache object, never a crash.
 */
export function decodePart(part: string | undefined): string | null {
  if (part === undefined) return null;
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

/**
 * A live entry's objects: its pack (one entry, tar + zstd) and, written after it, its record (digest,
 * sizes, who made it). Under the scope that wrote it and the stack it was compiled on.
 */
export function liveObjects(
  scope: string,
  stackId: string,
  cache: string,
  entry: string,
): { pack: string; record: string } {
  const base = `${LIVE}/${enc(scope)}/${enc(stackId)}/${enc(cache)}/${enc(entry)}`;
  return { pack: `${base}.tar.zst`, record: `${base}.json` };
}

/** Compile plans (cache/plan/plan.ts), one per key that recorded one, beside its manifest. */
export const PLANS = "plans";

/** A key's compile plan: what `kcache prewarm --cpu` compiles again with no GPU. */
export function planObject(scope: string, key: string): string {
  return `${PLANS}/${enc(scope)}/${enc(key)}.json`;
}

export function manifestObject(scope: string, key: string): string {
  return `${MANIFESTS}/${enc(scope)}/${enc(key)}`;
}

/** Names of manifests in `scope` whose key starts with `keyPrefix`. */
export function manifestListPrefix(scope: string, keyPrefix: string): string {
  return `${MANIFESTS}/${enc(scope)}/${enc(keyPrefix)}`;
}

/** A pack's name: the scope that wrote it and a unique id (its digest is kept in the manifest). */
export function packObject(scope: string, id: string): string {
  return `${PACKS}/${enc(scope)}/${id}.tar.zst`;
}

/** Scope and key of a manifest object name, or null for anything else. */
export function parseManifestObject(name: string): { scope: string; key: string } | null {
  const parts = name.split("/");
  if (parts.length !== 3 || parts[0] !== MANIFESTS) return null;
  const scope = decodePart(parts[1]);
  const key = decodePart(parts[2]);
  return scope === null || key === null ? null : { scope, key };
}

/** A save's lease, named by its id. */
export function leaseObject(id: string): string {
  return `${LEASES}/${id}.json`;
}

/** The mark prune leaves on a pack it is about to delete (the pack's object name, encoded as one part). */
export function condemnedObject(pack: string): string {
  return `${CONDEMNED}/${enc(pack)}`;
}

/** The pack a condemned mark is about, or null for anything else. */
export function parseCondemnedObject(name: string): string | null {
  const parts = name.split("/");
  if (parts.length !== 2 || parts[0] !== CONDEMNED) return null;
  return decodePart(parts[1]);
}

/** A run record's name: the scope that ran it, the workload prefix, and an id that sorts by time. */
export function runObject(scope: string, prefix: string, id: string): string {
  return `${runListPrefix(scope, prefix)}${id}.json`;
}

/** Names of the run records of one scope and workload prefix. */
export function runListPrefix(scope: string, prefix: string): string {
  return `${RUNS}/${enc(scope)}/${enc(prefix)}/`;
}

/** Scope and prefix of a run record's name, or null for anything else. */
export function parseRunObject(name: string): { scope: string; prefix: string } | null {
  const parts = name.split("/");
  if (parts.length !== 4 || parts[0] !== RUNS || !parts[3]?.endsWith(".json")) return null;
  const scope = decodePart(parts[1]);
  const prefix = decodePart(parts[2]);
  return scope === null || prefix === null ? null : { scope, prefix };
}
