/**
 * Where things live in a store. Scopes and keys are percent-encoded into single name parts, so a
 * branch called "a/b" cannot reach into another scope and prefix listing stays one level deep.
 */
export const MANIFESTS = "manifests";
export const PACKS = "packs";

const enc = (s: string) => encodeURIComponent(s);

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
  return { scope: decodeURIComponent(parts[1] ?? ""), key: decodeURIComponent(parts[2] ?? "") };
}
