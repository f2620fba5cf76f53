import fs from "node:fs";
import path from "node:path";
import type { CacheFolder, ScanResult } from "../kinds/kind.js";
import { entryId } from "../manifest/entry-id.js";
import type { EntryRef, Manifest } from "../manifest/manifest.js";
import type { RestoreTarget } from "../pack/pack-request.js";
import { stagingIsStale } from "../pack/read/staging-owner.js";
import { scanFolder } from "./cache-folder.js";
import { entrySignature } from "./entry-signature.js";
import type { JobContext } from "./job-context.js";
import { type LocalState, readState } from "./local-state.js";
import type { Match } from "./lookup.js";
import { hashEntry } from "./save-scan.js";
import { atimeRecordsReads, stampUnread } from "./usage.js";

/**
 * What a restore finds on disk, before and after it writes: entries already there as the manifest
 * has them, entries whole in their folder whatever the readers said, and the local state it leaves.
 */

/**
 * Entries the cache folder already holds as the manifest has them: recorded with this digest by the
 * last restore or save on this runner, and with their files' stats unchanged since.
 */
export function presentEntries(
  ctx: JobContext,
  manifest: Manifest,
  scans: Map<string, ScanResult>,
): EntryRef[] {
  const state = readState(ctx.stateFile);
  if (!state) return [];
  const out: EntryRef[] = [];
  for (const [name, scan] of scans) {
    const known = state.index[name];
    if (!known) continue;
    const onDisk = new Map(scan.entries.map((e) => [e.name, entrySignature(e)]));
    for (const e of manifest.entries) {
      const k = known[e.name];
      if (e.cache === name && k && k[1] === e.sha256 && onDisk.get(e.name) === k[0]) out.push(e);
    }
  }
  return out;
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
      if (!ref) continue;
      const present = { cache: name, kind: t.kind, root: t.root, entry, sig: "", digest: null, size: 0 };
      if (t.kind.incompleteReason(t.root, entry) === null && hashEntry(present) === ref.sha256)
        out.add(entryId(ref));
    }
  }
  return out;
}

/**
 * Records what was restored, with each entry's stat signature as it now lies on disk. Where reads
 * move access times (probed per folder), each restored entry is first stamped as unread, so the save
 * can tell which entries the job used (cache/usage.ts).
 */
export async function stateAfterRestore(
  ctx: JobContext,
  match: Match,
  restored: EntryRef[],
  targets: Map<string, RestoreTarget>,
  folders: Map<string, CacheFolder>,
): Promise<LocalState> {
  const index: LocalState["index"] = {};
  const atime: Record<string, boolean> = {};
  for (const [name, t] of targets) {
    const digests = new Map(restored.filter((r) => r.cache === name).map((r) => [r.name, r.sha256]));
    const scan = await scanFolder(folders.get(name) as CacheFolder, t.kind);
    const stamp = digests.size > 0 && atimeRecordsReads(t.root);
    if (digests.size > 0) {
      atime[name] = stamp;
      if (!stamp)
        ctx.log.debug(
          `${t.root}: reads do not move access times here (noatime?); every entry counts as used`,
        );
    }
    const idx: Record<string, [string, string]> = {};
    for (const found of scan.entries) {
      const d = digests.get(found.name);
      if (!d) continue;
      const e = stamp ? stampUnread(t.root, found) : found;
      idx[e.name] = [entrySignature(e), d];
    }
    index[name] = idx;
  }
  return {
    version: 1,
    primaryKey: ctx.key,
    parent: { key: match.key, scope: match.scope, exact: match.exact, manifest: match.manifest },
    index,
    usage: { atime },
  };
}

/** Removes staging folders no live restore owns (staging-owner.ts says when that is known). */
export function removeStaleStaging(root: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return;
  }
  for (const n of names)
    if (stagingIsStale(root, n)) fs.rmSync(path.join(root, n), { recursive: true, force: true });
}
