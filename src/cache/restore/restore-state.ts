import type { CacheFolder, CacheKind, FoundEntry, ScanResult } from "../../kinds/kind.js";
import { RelocationError } from "../../kinds/pickle-rewriter.js";
import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../../manifest/manifest.js";
import type { RestoreTarget } from "../../pack/pack-request.js";
import type { FolderScans } from "../autotune/withhold.js";
import { folderKind, scanFolder, selectedOf } from "../cache-folder.js";
import { entrySignature } from "../entry-signature.js";
import type { JobContext } from "../job-context.js";
import type { LocalState } from "../local-state.js";
import type { Match } from "../lookup.js";
import { hashEntry } from "../save/save-scan.js";
import { atimeRecordsReads, readSinceStamp, stampUnread } from "../usage/usage.js";

/**
 * What a restore finds on disk, before and after it writes: entries already there as the manifest
 * has them, entries whole in their folder whatever the readers said, and the local state it leaves.
 */

/**
 * Entries the cache folders already hold as the manifest has them, which a restore need not
 * download: recorded with this digest by the last restore or save on this runner with their files'
 * stats unchanged since, or (a runner that keeps its folder but not kcache's state) hashed now and
 * found equal. An entry that differs is not present: the key's verified one replaces it.
 */
export function presentEntries(
  manifest: Manifest,
  scans: Map<string, { kind: CacheKind; root: string; scan: ScanResult }>,
  state: LocalState | null,
): EntryRef[] {
  const out: EntryRef[] = [];
  for (const [name, { kind, root, scan }] of scans) {
    const known = state?.index[name] ?? {};
    const onDisk = new Map(scan.entries.map((e) => [e.name, e]));
    for (const e of manifest.entries) {
      const found = e.cache === name ? onDisk.get(e.name) : undefined;
      if (!found) continue;
      const k = known[e.name];
      if (k && k[1] === e.sha256 && k[0] === entrySignature(found)) out.push(e);
      else if (kind.incompleteReason(root, found) === null && hashOf(kind, root, found, name) === e.sha256)
        out.push(e);
    }
  }
  return out;
}

function hashOf(kind: CacheKind, root: string, entry: FoundEntry, cache: string): string | null {
  try {
    return hashEntry({ cache, kind, root, entry, sig: "", digest: null, size: 0 });
  } catch (e) {
    if (e instanceof RelocationError) return null; // not the entry the manifest has, as far as anyone can tell
    throw e;
  }
}

/** Of `refs` (entries the readers did not report placed), those whole in their folder as the manifest has them. */
export async function verifiedOnDisk(
  refs: EntryRef[],
  targets: Map<string, RestoreTarget>,
  folders: Map<string, CacheFolder>,
): Promise<Set<string>> {
  const out = new Set<string>();
  for (const [name, t] of targets) {
    const wanted = new Map(refs.filter((r) => r.cache === name).map((r) => [r.name, r]));
    if (wanted.size === 0) continue;
    const scan = await scanFolder(folders.get(name) as CacheFolder, t.kind);
    for (const entry of scan.entries) {
      const ref = wanted.get(entry.name);
      if (
        ref &&
        t.kind.incompleteReason(t.root, entry) === null &&
        hashOf(t.kind, t.root, entry, name) === ref.sha256
      )
        out.add(entryId(ref));
    }
  }
  return out;
}

/** What a restore leaves for the save: the state, and what it found in the folders. */
export interface RestoreRecord {
  state: LocalState;
  /** Entries in the folders that the key lacks (local, unverified), and entries in all. */
  local: number;
  entries: number;
  /** Whether reads move access times in every folder with entries (null: no entries). */
  atime: boolean | null;
  /** cache -> every entry in its folder -> its signature (the key's and the local ones). */
  seen: Record<string, Record<string, string>>;
}

/**
 * Records every entry of the job's folders with its stat signature as it now lies on disk: the key's
 * (restored or already present) with their digests, the rest as local and unverified. Where reads
 * move access times (probed per folder) and `stamp` is set, each entry is first stamped as unread,
 * so the save can tell which entries the job used (cache/usage.ts).
 */
export async function stateAfterRestore(
  ctx: JobContext,
  opts: {
    parent: Match | null;
    keyEntries: EntryRef[];
    kinds: Map<string, CacheKind>;
    stamp: boolean;
    /** The folders as the restore last found them, after its last change (else scanned here). */
    scans?: FolderScans;
  },
): Promise<RestoreRecord> {
  const record: RestoreRecord = {
    state: { version: 1, primaryKey: ctx.key, parent: opts.parent, index: {}, local: {} },
    local: 0,
    entries: 0,
    atime: null,
    seen: {},
  };
  const atime: Record<string, boolean> = {};
  for (const c of ctx.caches) {
    const kind = opts.kinds.get(c.name) ?? folderKind(c);
    if (!kind) continue;
    const digests = new Map(opts.keyEntries.filter((r) => r.cache === c.name).map((r) => [r.name, r.sha256]));
    const last = opts.scans?.get(c.name);
    const scan = last?.kind === kind ? selectedOf(c, last.scan) : await scanFolder(c, kind);
    const stamp = opts.stamp && scan.entries.length > 0 && atimeRecordsReads(c.path);
    if (opts.stamp && scan.entries.length > 0) {
      atime[c.name] = stamp;
      if (!stamp)
        ctx.log.debug(
          `${c.path}: reads do not move access times here (noatime?); every entry counts as used`,
        );
    }
    const idx: Record<string, [string, string]> = {};
    const local: Record<string, string> = {};
    const seen: Record<string, string> = {};
    for (const found of scan.entries) {
      // The pack readers stamped what they wrote; an entry not read since an earlier stamp keeps it.
      const e = stamp && readSinceStamp(found) ? stampUnread(c.path, found) : found;
      const d = digests.get(found.name);
      seen[e.name] = entrySignature(e);
      if (d) idx[e.name] = [seen[e.name] as string, d];
      else local[e.name] = seen[e.name] as string;
    }
    record.seen[c.name] = seen;
    record.state.index[c.name] = idx;
    (record.state.local as Record<string, Record<string, string>>)[c.name] = local;
    record.local += Object.keys(local).length;
    record.entries += scan.entries.length;
  }
  if (opts.stamp) record.state.usage = { atime };
  const seen = Object.values(atime);
  record.atime = seen.length ? seen.every(Boolean) : null;
  return record;
}
