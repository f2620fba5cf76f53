import type { CacheKindName } from "../../kinds/kind.js";
import { tritonKind } from "../../kinds/triton.js";
import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef } from "../../manifest/manifest.js";
import type { JobContext } from "../job-context.js";
import type { JobRecord } from "../local-state.js";
import type { SaveReport } from "../save/save-report.js";
import { DEFERRED_SIGNATURE, type Present, presentId } from "../save/save-scan.js";
import type { DeferredEntries } from "./deferred-entries.js";

/**
 * The deferred entries the job never fetched, as a save sees them: still the parent key's, in its
 * packs as they are (their digest is the key's), so the save carries them over rather than dropping
 * what the job merely did not look up. Entries on disk (fetched, or written by the job) are the scan's.
 */
export function stillDeferred(
  ctx: JobContext,
  deferred: DeferredEntries | undefined,
  present: Present[],
  kinds: Map<string, CacheKindName>,
): Present[] {
  if (!deferred) return [];
  const onDisk = new Set(present.map(presentId));
  const out: Present[] = [];
  for (const c of ctx.caches) {
    for (const [name, e] of Object.entries(deferred[c.name] ?? {})) {
      if (onDisk.has(entryId({ cache: c.name, name }))) continue;
      kinds.set(c.name, tritonKind.kind);
      out.push({
        cache: c.name,
        kind: tritonKind,
        root: c.path,
        entry: { name, files: [] },
        sig: DEFERRED_SIGNATURE,
        digest: e.sha256,
        size: e.size,
      });
    }
  }
  return out;
}

/**
 * What a save takes from the folders after a lazy or live job: the scan, without the entries placed
 * from other jobs' live objects that the parent key does not hold (a live entry becomes part of a
 * key only through the save of the job that compiled it, once its checks passed), and with the
 * deferred entries the job never fetched.
 */
export function carriedOver(
  ctx: JobContext,
  job: JobRecord | undefined,
  found: { scanned: Present[]; kinds: Map<string, CacheKindName>; parentRefs: Map<string, EntryRef> },
  report: SaveReport,
): Present[] {
  const live = new Set(
    Object.entries(job?.liveFetched ?? {}).flatMap(([cache, ns]) =>
      ns.map((name) => entryId({ cache, name })),
    ),
  );
  const kept = found.scanned.filter((p) => {
    const id = presentId(p);
    const ref = found.parentRefs.get(id);
    if (!live.has(id) || (ref !== undefined && ref.sha256 === p.digest)) return true;
    report.leftOut.live.entries++;
    report.leftOut.live.bytes += p.size;
    return false;
  });
  return [...kept, ...stillDeferred(ctx, job?.deferred, found.scanned, found.kinds)];
}
