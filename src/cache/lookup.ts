import { IntegrityError } from "../errors.js";
import { type LookupStep, restoreOrder } from "../keys/key.js";
import type { Log } from "../log.js";
import { decodeManifest, type Manifest } from "../manifest/manifest.js";
import { manifestListPrefix, manifestObject, parseManifestObject } from "../store/layout.js";
import type { Store } from "../store/store.js";
import { type Fault, fault } from "./faults.js";
import type { JobContext } from "./job-context.js";
import { gonePacks } from "./pack-lease.js";

export interface Match {
  key: string;
  scope: string;
  /** The primary key itself matched (not a prefix). */
  exact: boolean;
  manifest: Manifest;
}

/**
 * Finds the manifest to restore, in actions/cache order. A damaged manifest is reported and the
 * search goes on to the next candidate.
 */
export async function findManifest(ctx: JobContext, faults?: Fault[]): Promise<Match | null> {
  const steps = restoreOrder(ctx.key, ctx.stackKeyPrefix, ctx.restorePrefixes, ctx.scopes.read);
  return searchSteps(ctx.store, steps, ctx.key, ctx.log, faults);
}

export async function searchSteps(
  store: Store,
  steps: LookupStep[],
  primary: string,
  log: Log,
  faults?: Fault[],
): Promise<Match | null> {
  const tried = new Set<string>();
  for (const step of steps) {
    const candidates =
      step.match === "exact"
        ? [manifestObject(step.scope, step.value)]
        : (await store.list(manifestListPrefix(step.scope, step.value))).map((o) => o.name);
    // A prefix's count is what the listing found; an exact key is found only once its manifest is read.
    if (step.match === "prefix")
      log.debug(
        `looking up prefix ${step.value} in ${step.scope}: ${candidates.length ? `${candidates.length} found` : "none"}`,
      );
    for (const object of candidates) {
      if (tried.has(object)) continue;
      tried.add(object);
      const data = await store.read(object);
      if (step.match === "exact")
        log.debug(`looking up key ${step.value} in ${step.scope}: ${data ? "found" : "none"}`);
      if (!data) continue;
      try {
        const manifest = decodeManifest(data, object);
        const where = parseManifestObject(object);
        // A manifest is only the key it is stored under: one whose body names another key was
        // copied or forged, and restoring it would hand out another key's entries as this one.
        if (where && (where.key !== manifest.key || where.scope !== manifest.scope))
          throw new IntegrityError(
            `${object}: the manifest inside is ${manifest.scope}/${manifest.key}, not the key it is stored under`,
          );
        // Where the store evicts on its own (GitHub's cache), a key whose packs are gone is not
        // restored in part, nor built on: the next candidate is tried.
        if (store.capabilities.evicts) {
          const gone = await gonePacks(store, manifest);
          if (gone.length) {
            log.info(
              `${manifest.key}: ${gone.length} of its ${manifest.packs.length} packs were evicted by the store (${gone[0]}); trying the next candidate`,
            );
            continue;
          }
        }
        return {
          key: manifest.key,
          scope: where?.scope ?? step.scope,
          exact: manifest.key === primary,
          manifest,
        };
      } catch (e) {
        if (!(e instanceof IntegrityError)) throw e;
        log.warn(`${e.message}; skipping it`);
        faults?.push(fault("manifest-damaged", e.message));
      }
    }
  }
  return null;
}

/** Reads one manifest by key from the first readable scope that has it. */
export async function manifestByKey(
  ctx: JobContext,
  key: string,
  scopes = ctx.scopes.read,
): Promise<Match | null> {
  return searchSteps(
    ctx.store,
    scopes.map((scope) => ({ scope, match: "exact" as const, value: key })),
    ctx.key,
    ctx.log,
  );
}

/** Finds the manifest of exactly `key` in this run's read scopes, in order (no prefix fallback). */
export async function findExact(ctx: JobContext, key: string, faults?: Fault[]): Promise<Match | null> {
  const steps = ctx.scopes.read.map((scope) => ({ scope, match: "exact" as const, value: key }));
  return searchSteps(ctx.store, steps, key, ctx.log, faults);
}
