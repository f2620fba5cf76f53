import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import type { Manifest } from "../manifest/manifest.js";
import { condemnedObject, LEASES, leaseObject } from "../store/layout.js";
import { ObjectFault, type Store } from "../store/store.js";

/**
 * How a save and a prune that run at the same time never leave a manifest pointing at a deleted pack.
 *
 * A save first writes a lease naming the packs it will reuse (and the prefix of the packs it will
 * write), then checks that none of them is condemned or gone, and only then writes its manifest; it
 * removes the lease last. Prune condemns the packs it found unreferenced, only then lists leases, then
 * lists manifests again, and deletes a condemned pack only if no live lease and no manifest names it.
 * Either the prune sees the lease (or the manifest it became), or the save's check comes after the
 * condemnation and the save packs those entries afresh. Leases of killed saves expire.
 *
 * No clock is trusted across hosts: a lease's age is judged by the store's own clock (the
 * modification time of an object prune writes just then, against the lease's), a save refreshes its
 * lease while it runs, and after its manifest is written a save checks its reused packs once more and
 * withdraws the key to pack their entries afresh if one was pruned anyway (a writer whose clock the
 * store kept, hours off).
 */
export const LEASE_TTL_MS = 6 * 60 * 60 * 1000;
/** The most a lease may hold: the names of the packs one save reuses (a real one is kilobytes). */
const MAX_LEASE_BYTES = 16 * 1024 * 1024;

export interface LeaseBody {
  id: string;
  key: string;
  createdAt: string;
  /** Packs the save references from its parent. */
  reuses: string[];
  /** Packs whose name contains this id are being written by the save. */
  writes: string;
}

export interface Lease {
  id: string;
  /** Removes the lease; never fails the save. */
  release(): Promise<void>;
}

/** A save in flight rewrites its lease this often, so a long one never looks expired. */
export const LEASE_REFRESH_MS = LEASE_TTL_MS / 6;

/** A fresh lease id; packs of the save carry it in their name. */
export function newLeaseId(): string {
  return `${Date.now().toString(36)}-${randomBytes(8).toString("hex")}`;
}

/** Writes a lease for a save that reuses `reuses` and writes packs named with `id`. */
export async function takeLease(store: Store, id: string, key: string, reuses: string[]): Promise<Lease> {
  const write = () => {
    const body: LeaseBody = { id, key, createdAt: new Date().toISOString(), reuses, writes: id };
    return store.put(leaseObject(id), Readable.from([Buffer.from(JSON.stringify(body))]));
  };
  await write();
  const refresh = setInterval(() => void write().catch(() => {}), LEASE_REFRESH_MS);
  refresh.unref();
  return {
    id,
    release: () => {
      clearInterval(refresh);
      return store.delete(leaseObject(id)).catch(() => {});
    },
  };
}

/**
 * The reused packs a save may not rely on: condemned by a prune, gone, or no longer the size the
 * parent's manifest gives them (truncated or replaced in the store: a new key naming it would be
 * broken from its first restore, and a restore killed before it verified anything leaves the save
 * no other sign of it). A listing's size costs what an existence check does.
 */
export async function unusablePacks(
  store: Store,
  packs: { object: string; size: number }[],
): Promise<Set<string>> {
  const out = new Set<string>();
  await Promise.all(
    packs.map(async ({ object, size }) => {
      if (await store.exists(condemnedObject(object))) out.add(object);
      else if ((await store.list(object)).find((o) => o.name === object)?.size !== size) out.add(object);
    }),
  );
  return out;
}

/**
 * "Now" by the store's own clock: the modification time the store gives an object written just now
 * (S3's LastModified, the file server's mtime), so lease ages compare two times of one clock. Falls
 * back to this host's clock when the store does not show the object.
 */
export async function storeNow(store: Store): Promise<number> {
  const name = `${LEASES}/${CLOCK_PREFIX}${randomBytes(8).toString("hex")}`;
  try {
    await store.put(name, Readable.from([Buffer.from("clock")]));
    const seen = (await store.list(name)).find((o) => o.name === name);
    return seen ? seen.modified.getTime() : Date.now();
  } finally {
    await store.delete(name).catch(() => {});
  }
}

const CLOCK_PREFIX = "clock-";

/** The packs that no longer exist. */
export async function missingPacks(store: Store, packs: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  await Promise.all(
    packs.map(async (p) => {
      if (!(await store.exists(p))) out.add(p);
    }),
  );
  return out;
}

/** A manifest's packs that are not in the store (evicted, or deleted), in the manifest's order. */
export async function gonePacks(store: Store, manifest: Manifest): Promise<string[]> {
  const objects = manifest.packs.map((p) => p.object);
  const missing = await missingPacks(store, objects);
  return objects.filter((o) => missing.has(o));
}

/** Live leases (younger than the TTL by the store's clock, `now`) and the names of expired ones. */
export async function readLeases(
  store: Store,
  now: number,
): Promise<{ live: LeaseBody[]; expired: string[] }> {
  const live: LeaseBody[] = [];
  const expired: string[] = [];
  for (const o of await store.list(`${LEASES}/`)) {
    if (o.name.startsWith(`${LEASES}/${CLOCK_PREFIX}`)) continue;
    if (now - o.modified.getTime() > LEASE_TTL_MS) {
      expired.push(o.name);
      continue;
    }
    let data: Buffer | null;
    try {
      data = await store.read(o.name, MAX_LEASE_BYTES);
    } catch (e) {
      // Too large or not a file: no save wrote it, so it protects nothing.
      if (e instanceof ObjectFault) continue;
      throw e;
    }
    if (!data) continue;
    try {
      const b = JSON.parse(data.toString("utf8")) as LeaseBody;
      if (typeof b.writes === "string" && Array.isArray(b.reuses)) live.push(b);
    } catch {
      // A lease being written, or damaged: it protects nothing, and expires like the others.
    }
  }
  return { live, expired };
}

/** Whether a live lease protects `pack`. */
export function leased(leases: LeaseBody[], pack: string): boolean {
  return leases.some((l) => l.reuses.includes(pack) || (l.writes !== "" && pack.includes(l.writes)));
}
