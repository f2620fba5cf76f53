import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { condemnedObject, LEASES, leaseObject } from "../store/layout.js";
import type { Store } from "../store/store.js";

/**
 * How a save and a prune that run at the same time never leave a manifest pointing at a deleted pack.
 *
 * A save first writes a lease naming the packs it will reuse (and the prefix of the packs it will
 * write), then checks that none of them is condemned or gone, and only then writes its manifest; it
 * removes the lease last. Prune condemns the packs it found unreferenced, only then lists leases, then
 * lists manifests again, and deletes a condemned pack only if no live lease and no manifest names it.
 * Either the prune sees the lease (or the manifest it became), or the save's check comes after the
 * condemnation and the save packs those entries afresh. Leases of killed saves expire.
 */
export const LEASE_TTL_MS = 6 * 60 * 60 * 1000;

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

/** A fresh lease id; packs of the save carry it in their name. */
export function newLeaseId(): string {
  return `${Date.now().toString(36)}-${randomBytes(8).toString("hex")}`;
}

/** Writes a lease for a save that reuses `reuses` and writes packs named with `id`. */
export async function takeLease(store: Store, id: string, key: string, reuses: string[]): Promise<Lease> {
  const body: LeaseBody = { id, key, createdAt: new Date().toISOString(), reuses, writes: id };
  await store.put(leaseObject(id), Readable.from([Buffer.from(JSON.stringify(body))]));
  return {
    id,
    release: () => store.delete(leaseObject(id)).catch(() => {}),
  };
}

/** The reused packs a save may not rely on: condemned by a prune, or already gone. */
export async function unusablePacks(store: Store, packs: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  await Promise.all(
    packs.map(async (p) => {
      if ((await store.exists(condemnedObject(p))) || !(await store.exists(p))) out.add(p);
    }),
  );
  return out;
}

/** Live leases (younger than the TTL) and the names of expired ones. */
export async function readLeases(
  store: Store,
  now: number,
): Promise<{ live: LeaseBody[]; expired: string[] }> {
  const live: LeaseBody[] = [];
  const expired: string[] = [];
  for (const o of await store.list(`${LEASES}/`)) {
    if (now - o.modified.getTime() > LEASE_TTL_MS) {
      expired.push(o.name);
      continue;
    }
    const data = await store.read(o.name);
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
