import { RelocationError } from "../../kinds/pickle-rewriter.js";
import type { Log } from "../../log.js";
import type { WrittenPack } from "../../pack/write/pack-writer.js";
import { StoredForms } from "../../pack/write/stored-forms.js";
import { fault } from "../faults.js";
import type { SaveReport } from "./save-report.js";
import { hashEntry, type Present, presentId } from "./save-scan.js";

/**
 * Entries a save leaves out because they name their folder and cannot be stored without it
 * (torch.compile's pickles with no interpreter to rewrite them, or damaged): found while hashing or
 * packing, said once as a warning, a fault (`--strict` exits 3).
 */
export class Unrelocatable {
  /** "cache/name: why". */
  private readonly left: string[] = [];
  /** The stored forms of the save's pickles, written ahead in one rewriter process per batch. */
  readonly forms = new StoredForms();

  /** The digests of `entries` (see hash), their pickles rewritten together first. */
  hashAll(entries: Present[]): Map<Present, string | null | false> {
    this.forms.prepare(entries);
    return new Map(entries.map((p) => [p, this.hash(p)]));
  }

  /** hashEntry, or false for an entry left out. */
  hash(p: Present): string | null | false {
    try {
      return hashEntry(p, this.forms.of(p.root, p.entry));
    } catch (e) {
      if (!(e instanceof RelocationError)) throw e;
      this.left.push(`${presentId(p)}: ${e.message}`);
      return false;
    }
  }

  /** What the pack writers left out. */
  fromPacks(written: WrittenPack[]): void {
    for (const w of written) this.left.push(...w.notRelocatable);
  }

  report(log: Log, report: SaveReport): void {
    report.skipped.notRelocatable = this.left.length;
    if (!this.left.length) return;
    const message = `${this.left.length} entries name their cache folder and could not be stored without it, so they were not saved (${this.left[0]})`;
    log.warn(message);
    report.faults.push(fault("entry-not-relocatable", message));
  }
}
