import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SIM } from "../helpers/python-sim.js";

/**
 * What each producer's code compiles, byte for byte: the simulated Triton (demo/sim) is a pure
 * function of a kernel's name and options, so running each workload once into a folder of its own,
 * with no kcache anywhere, gives the reference the simulation's invariants hold kcache to. A main
 * job compiles the `core` kernels and those of its revision's code (`m0`..`m2`); a pull request its
 * own (`p<n>`, a fork's `f<n>`), a build kcache cannot place `u`, a process that never ran kcache `evil`.
 */
export interface Workload {
  prefix: string;
  plain: number;
  autotuned: number;
}

export const CORE: Workload = { prefix: "core", plain: 3, autotuned: 1 };
export const MAIN_REVISIONS = 3;
export const mainCode = (rev: number): Workload => ({
  prefix: `m${rev % MAIN_REVISIONS}`,
  plain: 2,
  autotuned: 0,
});
export const prCode = (n: number, fork: boolean): Workload => ({
  prefix: `${fork ? "f" : "p"}${n}`,
  plain: 2,
  autotuned: 1,
});
export const UNPLACED_CODE: Workload = { prefix: "u", plain: 2, autotuned: 0 };
export const EVIL_CODE: Workload = { prefix: "evil", plain: 2, autotuned: 1 };

/** One entry folder as its producer wrote it: file name -> bytes (a group file: the names it lists). */
export interface RefEntry {
  files: Map<string, Buffer>;
  /** The names a group file lists, for each group file (its paths are the producer's folder). */
  groups: Map<string, string[]>;
}

export interface Reference {
  /** Every entry any workload compiles, by its folder name. */
  entries: Map<string, RefEntry>;
  /** The entry names trusted code (core and every main revision) compiles. */
  trusted: Set<string>;
  /** The entry names each workload compiles, by prefix. */
  byPrefix: Map<string, Set<string>>;
}

let made: Reference | undefined;

/** The workload's command line (TRITON_CACHE_DIR set by the caller). */
export function workloadArgs(w: Workload): string[] {
  return [path.join(SIM, "workload.py"), String(w.plain), String(w.autotuned), "--prefix", w.prefix];
}

/** The reference for every workload the simulation runs, made once per process. */
export function reference(): Reference {
  if (made) return made;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-sim-ref-"));
  const entries = new Map<string, RefEntry>();
  const byPrefix = new Map<string, Set<string>>();
  const trusted = new Set<string>();
  const all = [
    CORE,
    ...Array.from({ length: MAIN_REVISIONS }, (_, r) => mainCode(r)),
    ...[1, 2, 3].flatMap((n) => [prCode(n, false), prCode(n, true)]),
    UNPLACED_CODE,
    EVIL_CODE,
  ];
  for (const w of all) {
    const folder = path.join(dir, w.prefix);
    execFileSync("python3", workloadArgs(w), {
      env: { PATH: process.env.PATH, PYTHONPATH: SIM, TRITON_CACHE_DIR: folder, TRITON_SIM_COMPILE_MS: "0" },
      stdio: "ignore",
    });
    const names = new Set<string>();
    for (const name of fs.readdirSync(folder)) {
      names.add(name);
      const entry = readEntry(path.join(folder, name));
      const known = entries.get(name);
      if (known && !sameEntry(known, entry))
        throw new Error(
          `the simulated Triton wrote ${name} two ways: the reference cannot hold kcache to it`,
        );
      entries.set(name, entry);
      if (w.prefix === "core" || /^m\d$/.test(w.prefix)) trusted.add(name);
    }
    byPrefix.set(w.prefix, names);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  made = { entries, trusted, byPrefix };
  return made;
}

/** An entry folder's files; a group file read as the names it lists. */
export function readEntry(folder: string): RefEntry {
  const files = new Map<string, Buffer>();
  const groups = new Map<string, string[]>();
  for (const f of fs.readdirSync(folder)) {
    const p = path.join(folder, f);
    if (!fs.lstatSync(p).isFile()) continue;
    const data = fs.readFileSync(p);
    files.set(f, data);
    if (f.startsWith("__grp__")) groups.set(f, groupNames(data));
  }
  return { files, groups };
}

export function groupNames(data: Buffer): string[] {
  try {
    const g = JSON.parse(data.toString("utf8")) as { child_paths?: Record<string, string> };
    return Object.keys(g.child_paths ?? {}).sort();
  } catch {
    return ["(not a group file)"];
  }
}

function sameEntry(a: RefEntry, b: RefEntry): boolean {
  if (a.files.size !== b.files.size) return false;
  for (const [f, data] of a.files) {
    const other = b.files.get(f);
    if (!other) return false;
    if (f.startsWith("__grp__")) continue;
    if (!other.equals(data)) return false;
  }
  return true;
}

/**
 * How an entry as found (in a cache folder or a pack) differs from what its producer wrote, or null
 * when it is the same: every file byte for byte, group files listing the same names at `root`
 * (when given: a restored group file must name the folder it was restored to).
 */
export function entryDiffers(name: string, found: RefEntry, root?: string): string | null {
  const ref = reference().entries.get(name);
  if (!ref) return `${name} is no entry any workload compiles`;
  if (found.files.size !== ref.files.size)
    return `${name} holds ${found.files.size} of its ${ref.files.size} files`;
  for (const [f, data] of found.files) {
    const want = ref.files.get(f);
    if (!want) return `${name}/${f} is no file of the entry`;
    if (f.startsWith("__grp__")) {
      const names = groupNames(data);
      if (names.join() !== (ref.groups.get(f) ?? []).join()) return `${name}/${f} lists other files`;
      if (root) {
        const g = JSON.parse(data.toString("utf8")) as { child_paths: Record<string, string> };
        const outside = Object.values(g.child_paths).find((p) => path.dirname(p) !== path.join(root, name));
        if (outside) return `${name}/${f} names ${outside}, not the folder it lies in`;
      }
    } else if (!data.equals(want)) return `${name}/${f} differs from what its producer wrote`;
  }
  return null;
}
