import fs from "node:fs";
import { isTrustedScope } from "../../keys/scope.js";
import type { CacheFolder, CacheKind, CacheKindName, FoundEntry } from "../../kinds/kind.js";
import { entryId } from "../../manifest/entry-id.js";
import { EntryDigest } from "../../pack/entry-digest.js";
import { chunks, closeEntry, openEntry } from "../../pack/write/entry-source.js";
import type { StoredFiles } from "../../pack/write/stored-forms.js";
import { folderKind, scanFolder } from "../cache-folder.js";
import { entrySignature } from "../entry-signature.js";
import type { JobContext } from "../job-context.js";
import type { LocalState } from "../local-state.js";
import { keptBetweenJobs } from "../persistent/use-record.js";
import type { Tally } from "../usage/working-set.js";

/** A complete entry found in a cache folder, as a save sees it. */
export interface Present {
  cache: string;
  kind: CacheKind;
  root: string;
  entry: FoundEntry;
  /** Its files' stat signature. */
  sig: string;
  /** Its digest, when known (recorded by the last restore or save with this signature, or hashed). */
  digest: string | null;
  size: number;
}

/** What a scan left out, by reason (SaveReport.skipped). */
export interface Skipped {
  incomplete: number;
  tempDirs: number;
  lockFiles: number;
  /** Precompiled headers and other files valid only on the machine that built them. */
  localFiles: number;
  otherFiles: number;
  vanished: number;
  /** Entries that name their folder and could not be stored without it (a fault, said as a warning). */
  notRelocatable: number;
}

/** The signature of an entry a lazy restore left in the store (cache/lazy/carried-over.ts): no scan's equals it. */
export const DEFERRED_SIGNATURE = "deferred";

/** Whether a save's entry is one a lazy restore left in the store: not on disk, so never packed again. */
export const isDeferred = (p: Present): boolean => p.sig === DEFERRED_SIGNATURE;

/** The id of a present entry ("cache/name"), as manifests key entries. */
export const presentId = (p: Present) => entryId({ cache: p.cache, name: p.entry.name });

/**
 * The scan phase of a save: the complete entries of every configured cache, each with its digest
 * when the last restore or save recorded it with the same stats. Incomplete entries, compiler temp
 * folders, locks and machine-local files are counted in `skipped`, never returned; a folder that
 * gives nothing gets a warning that names it and says why.
 */
export async function scanForSave(
  ctx: JobContext,
  state: LocalState | null,
  skipped: Skipped,
): Promise<{ present: Present[]; kinds: Map<string, CacheKindName> }> {
  const present: Present[] = [];
  const kinds = new Map<string, CacheKindName>();
  for (const c of ctx.caches) {
    const kind = folderKind(c);
    if (!kind) {
      nothingToSave(ctx, c, fs.existsSync(c.path) ? "the folder is empty" : "the folder does not exist");
      continue;
    }
    kinds.set(c.name, kind.kind);
    const scan = await scanFolder(c, kind);
    const before = present.length;
    let incomplete = 0;
    skipped.tempDirs += scan.tempDirs;
    skipped.lockFiles += scan.lockFiles;
    skipped.localFiles += scan.localFiles;
    skipped.otherFiles += scan.otherFiles;
    const known = state?.index[c.name] ?? {};
    for (const entry of scan.entries) {
      const sig = entrySignature(entry);
      const k = known[entry.name];
      const size = entry.files.reduce((s, f) => s + f.size, 0);
      if (k && k[0] === sig) {
        present.push({ cache: c.name, kind, root: c.path, entry, sig, digest: k[1], size });
        continue;
      }
      const why = kind.incompleteReason(c.path, entry);
      if (why) {
        skipped.incomplete++;
        incomplete++;
        ctx.log.debug(`not saving ${c.name}/${entry.name}: ${why}`);
        continue;
      }
      present.push({ cache: c.name, kind, root: c.path, entry, sig, digest: null, size });
    }
    if (present.length === before) {
      nothingToSave(
        ctx,
        c,
        incomplete
          ? `its ${incomplete} entries are incomplete (compiles that did not finish)`
          : scan.filtered
            ? `the patterns left out all ${scan.filtered} of its entries${c.exclude?.length ? ` (excluded by ${c.exclude.map((x) => `!${x}`).join(", ")})` : ""}`
            : scan.entries.length === 0 && fs.existsSync(c.path)
              ? "the folder has nothing a save keeps (only temp folders, locks or links)"
              : "the folder does not exist",
      );
    }
  }
  return { present, kinds };
}

/** A folder that gives nothing to save is worth a warning that names it and says why. */
function nothingToSave(ctx: JobContext, c: CacheFolder, why: string): void {
  ctx.log.warn(`path ${c.path} (cache ${c.name}): nothing to save: ${why}`);
}

/** One buffer every hashed file is read through (hashEntry is synchronous: one file at a time). */
let readBuffer: Buffer | undefined;

/** Digest of an entry as it would be packed, without packing it; null when its files vanished. */
export function hashEntry(p: Present, stored?: StoredFiles): string | null {
  const files = openEntry(p.kind, p.root, p.entry, stored);
  if (!files) return null;
  const d = new EntryDigest();
  readBuffer ??= Buffer.allocUnsafe(1 << 20);
  try {
    for (const f of files) {
      d.beginFile(f.rel, f.size);
      for (const c of chunks(f, readBuffer)) d.update(c);
    }
  } finally {
    closeEntry(files);
  }
  return d.digest();
}

/**
 * The entries a save may upload: all of `kept` but those its job's restore found in the folder
 * without the restored key vouching for them (local, unverified: left by an earlier job on this
 * runner, a pull request's among them) and that are unchanged since. `reused` entries (the parent
 * key has them byte for byte) always stay; a cache with `trustLocal` keeps everything. Without a
 * restore in this job there is no record, and every entry counts as the job's own (an ephemeral
 * runner's save alone): said as a warning where an earlier job ended in the folder, since on a runner
 * that keeps its folder that uploads whatever earlier jobs left.
 */
export function leaveOutUnverified(
  ctx: JobContext,
  found: { kept: Present[]; reused: Present[]; ours: LocalState | null },
  report: { leftOut: { unverified: Tally; otherRevisions: Tally } },
): Present[] {
  const { kept, reused, ours } = found;
  if (!ours?.local) {
    // Said where it matters: a folder an earlier job ended in (a persistent runner's), saved for a trusted scope.
    const persistent = ctx.caches.some((c) => keptBetweenJobs(c.path));
    if (kept.length > reused.length && isTrustedScope(ctx.scopes.write) && persistent)
      ctx.log.warn(
        `no restore ran before this save in this job (${ctx.stateFile}): every entry in the caches counts as this job's own; on a runner that keeps its cache folder between jobs, run kcache restore before the job so that only entries it made or the restored key vouches for are uploaded`,
      );
    return kept;
  }
  const trusted = new Set(ctx.caches.filter((c) => c.trustLocal).map((c) => c.name));
  const vouched = new Set(reused);
  const out: Present[] = [];
  for (const p of kept) {
    // Borrowed from another revision's key (restore-revisions): that key has it; this one must not.
    const borrowed = ours.job?.borrowed?.[p.cache]?.[p.entry.name];
    if (borrowed !== undefined && borrowed === p.sig && !vouched.has(p)) {
      report.leftOut.otherRevisions.entries++;
      report.leftOut.otherRevisions.bytes += p.size;
      continue;
    }
    const before = ours.local[p.cache]?.[p.entry.name];
    if (vouched.has(p) || trusted.has(p.cache) || before === undefined || before !== p.sig) out.push(p);
    else {
      report.leftOut.unverified.entries++;
      report.leftOut.unverified.bytes += p.size;
    }
  }
  return out;
}
