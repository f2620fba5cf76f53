import type { CacheFolder } from "../../kinds/kind.js";
import { NOT_RELOCATABLE } from "../../kinds/pickle-rewriter.js";
import { entryId } from "../../manifest/entry-id.js";
import type { EntryRef } from "../../manifest/manifest.js";
import type { RestoreTarget } from "../../pack/pack-request.js";
import { diskFaultIn, type Fault, fault } from "../faults.js";
import type { JobContext } from "../job-context.js";
import type { Match } from "../lookup.js";
import type { PackOutcome } from "./restore-packs.js";
import type { RestoreReport } from "./restore-report.js";
import { verifiedOnDisk } from "./restore-state.js";

/**
 * What the pack readers' outcomes leave in place, counted from the disk, not from what the readers
 * said: an entry a thread placed before it died, or that another restore into this folder placed,
 * is in the cache as the manifest has it. The rest are bad entries and faults, said in one warning.
 */
export async function settleOutcomes(
  ctx: JobContext,
  match: Match,
  results: PackOutcome[],
  { targets, folders }: { targets: Map<string, RestoreTarget>; folders: Map<string, CacheFolder> },
  report: RestoreReport,
): Promise<EntryRef[]> {
  const restored: EntryRef[] = [];
  const missing: EntryRef[] = [];
  const unreadable: Fault[] = [];
  const refused: Fault[] = [];
  /** Faults of entries, by "cache/name" (the readers' label, as `recovered` holds it). */
  const entryFaults: { entry: string; fault: Fault }[] = [];
  for (const { refs, result } of results) {
    const ok = new Set(result.restored.map(entryId));
    for (const r of refs) (ok.has(entryId(r)) ? restored : missing).push(r);
    report.bytesDownloaded += result.bytes;
    report.membersRefused += result.refused.length;
    if (result.rewriter) {
      report.rewriter.processes += result.rewriter.processes;
      report.rewriter.files += result.rewriter.files;
      report.rewriter.seconds += result.rewriter.seconds;
    }
    const pack = refs[0] ? match.manifest.packs[refs[0].pack]?.object : "?";
    if (result.packError) {
      const message = `${pack}: ${result.packError}`;
      unreadable.push(fault(diskFaultIn(message) ? "disk-failed" : "pack-unreadable", message));
    }
    for (const b of result.bad) {
      const message = `entry ${b.entry}: ${b.reason}`;
      const code = b.reason.startsWith(NOT_RELOCATABLE)
        ? "entry-not-relocatable"
        : diskFaultIn(message)
          ? "disk-failed"
          : "entry-bad";
      entryFaults.push({ entry: b.entry, fault: fault(code, message) });
    }
    for (const r of result.refused) refused.push(fault("member-refused", `pack member refused: ${r}`));
  }
  const onDisk = await verifiedOnDisk(missing, targets, folders);
  const recovered = new Set<string>();
  for (const r of missing)
    if (onDisk.has(entryId(r))) {
      restored.push(r);
      recovered.add(`${r.cache}/${r.name}`);
    }
  report.entriesBad = missing.length - recovered.size;
  const stillBad = entryFaults.filter((f) => !recovered.has(f.entry)).map((f) => f.fault);
  const unplaceable = stillBad.filter((f) => f.code === "entry-not-relocatable");
  // One warning, however many packs failed; the details with --verbose.
  if (unreadable.length || report.entriesBad || report.membersRefused) {
    const parts = [
      unreadable.length
        ? `${unreadable.length} of ${results.length} packs could not be read (${unreadable[0]?.message})`
        : null,
      report.entriesBad > unplaceable.length
        ? `${report.entriesBad - unplaceable.length} entries failed verification or were missing and were not written`
        : null,
      unplaceable.length
        ? `${unplaceable.length} entries name their cache folder and could not be relocated, so they were not written (the job compiles them): ${unplaceable[0]?.message.replace(/^entry [^:]*: not relocatable: /, "")}`
        : null,
      report.membersRefused ? `${report.membersRefused} unsafe pack members refused` : null,
    ].filter(Boolean);
    ctx.log.warn(`restore of ${match.key} incomplete: ${parts.join("; ")}`);
    const said = [...unreadable, ...stillBad, ...refused];
    for (const f of said) ctx.log.debug(`${f.code}: ${f.message}`);
    report.faults.push(...said);
  }
  return restored;
}

/** Adds the entries now in place to the report's counts, per cache and in all. */
export function countRestored(report: RestoreReport, restored: EntryRef[]): void {
  for (const r of restored) {
    const c = report.caches.find((x) => x.name === r.cache);
    if (c) {
      c.entries++;
      c.bytes += r.size;
    }
    report.entriesRestored++;
    report.bytesRestored += r.size;
  }
}
