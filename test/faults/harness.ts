import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decodeManifest } from "../../src/manifest/manifest.js";

/** One line of the fault suite's table: what was injected and what a user would have noticed. */
export interface FaultRow {
  fault: string;
  trials: number;
  /** Restores that left a damaged entry visible, or a key that did not restore whole. */
  corruptRestores: number;
  /** Files written outside the cache folder, the store and kcache's state. */
  writesOutside: number;
  /** Entries of a pull request's run that a default-branch restore received. */
  foreignInDefault: number;
  /** Peak resident memory of any kcache process in the scenario (MB); null when every run was killed. */
  peakRssMb: number | null;
  /** The longest single kcache run (s). */
  maxWallS: number;
  /** Exit code -> how many runs ended with it ("killed" for kill -9). */
  exitCodes: Record<string, number>;
}

/** Where scenarios leave their rows: named by the global setup for every worker (their TMPDIR is the run's own). */
export const ROWS_DIR = process.env.KCACHE_FAULT_ROWS ?? path.join(os.tmpdir(), "kcache-fault-rows");

/** A row being filled by one scenario. */
export class Tally {
  readonly row: FaultRow;
  constructor(fault: string) {
    this.row = {
      fault,
      trials: 0,
      corruptRestores: 0,
      writesOutside: 0,
      foreignInDefault: 0,
      peakRssMb: null,
      maxWallS: 0,
      exitCodes: {},
    };
  }

  /** Counts one kcache run: its exit code (or "killed"), wall time and peak memory. */
  run(r: { code: number | null; seconds: number; peakRssMb: number | null }): void {
    const code = r.code === null ? "killed" : String(r.code);
    this.row.exitCodes[code] = (this.row.exitCodes[code] ?? 0) + 1;
    this.row.maxWallS = Math.max(this.row.maxWallS, r.seconds);
    if (r.peakRssMb !== null) this.row.peakRssMb = Math.max(this.row.peakRssMb ?? 0, r.peakRssMb);
  }

  /** Writes the row where the suite's teardown collects it. */
  save(): FaultRow {
    fs.mkdirSync(ROWS_DIR, { recursive: true });
    const file = path.join(ROWS_DIR, `${this.row.fault.replace(/[^A-Za-z0-9]+/g, "_")}.json`);
    fs.writeFileSync(file, JSON.stringify(this.row));
    return this.row;
  }
}

/** Regular files under `dir` whose path (relative) starts with none of `allowed`. */
export function filesOutside(dir: string, allowed: string[]): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .filter((rel) => !allowed.some((a) => rel === a || rel.startsWith(`${a}/`)));
}

/** A random integer in [lo, hi]. */
export function randomInt(lo: number, hi: number): number {
  return lo + Math.floor(Math.random() * (hi - lo + 1));
}

/** Every entry name in the keys of the default branch's scope of a local store. */
export function defaultBranchEntries(store: string): string[] {
  const dir = path.join(store, "manifests", encodeURIComponent("branch/main"));
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .flatMap((f) => decodeManifest(fs.readFileSync(path.join(dir, f)), f).entries.map((e) => e.name));
}
