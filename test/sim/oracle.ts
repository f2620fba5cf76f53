import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { decodeManifest, type Manifest } from "../../src/manifest/manifest.js";
import { entryDiffers, readEntry, reference } from "./reference.js";
import type { CliRun, World } from "./world.js";

/**
 * kcache's promises as the simulation checks them after every step, each stated once here (and in
 * RELIABILITY.md, "The simulation"). The store is read as it lies (a local store: its folder), never
 * through kcache, so a bug in kcache's reading cannot hide one in its writing.
 */
export const INVARIANTS = {
  I1: "every key a restore can find names only packs that exist and verify, or was broken by the store losing them after it was written; no save deletes an object a stored manifest names",
  I2: "no entry, file or live object written by a process outside a trusted job reaches a key or live scope the default branch reads",
  I3: "nothing outside the cache folders and kcache's own state is read into a pack or uploaded, nor written",
  I4: "every entry a job gets (restored, fetched on demand, live) is byte for byte what its producer wrote",
  I5: "every command ends within its bound, leaves the job's shell able to run its next line, and none exits with an internal error on anything a store or a job can produce",
} as const;
export type Invariant = keyof typeof INVARIANTS;

/** The scopes the default branch reads (keys/scope.ts): its own, encoded as the store names it. */
const TRUSTED_SCOPES = new Set(["branch%2Fmain"]);

/** What an internal error looks like on stderr: a bug, never an answer to anything a store or job did. */
const INTERNAL =
  /internal error|TypeError|ReferenceError|RangeError|SyntaxError|Cannot read properties|Unhandled|ERR_UNHANDLED/;

/** The poison a hostile process writes into an entry's file (test/sim/steps.ts). */
export const POISON = "POISONED-BY-ANOTHER-JOB";

/**
 * Each object the simulation damaged, by name, with the keys (manifest objects) the store held at that
 * moment: those keys are broken by the store, not by kcache; a key written after the damage that names
 * the object relied on a pack it did not check. (By the step order, not by clocks: a save can land
 * within the store's time resolution of the damage.)
 */
export type Damage = Map<string, Set<string>>;

/** Packs already read whole and checked, by object name and digest: keys are immutable, so each is read once. */
const checkedPacks = new Map<string, Map<string, Buffer>>();

/** Checks the invariants that concern the store and the secret; pushes each violation onto the world. */
export function checkStore(w: World, damage: Damage): void {
  const root = w.storeDir;
  for (const object of objects(root, "manifests")) {
    if (damage.has(object)) continue;
    const file = path.join(root, object);
    let manifest: Manifest;
    try {
      manifest = decodeManifest(fs.readFileSync(file), object);
    } catch (e) {
      w.violated("I1", `${object} is a manifest kcache wrote that does not verify: ${(e as Error).message}`);
      continue;
    }
    const scope = object.split("/")[1] ?? "";
    for (const p of manifest.packs) {
      const keysThen = damage.get(p.object);
      const pack = path.join(root, p.object);
      const st = fs.lstatSync(pack, { throwIfNoEntry: false });
      const whole = st?.isFile() && sha256(pack) === p.sha256;
      if (whole) {
        checkPack(w, object, scope, manifest, p.object, pack, p.sha256);
        continue;
      }
      if (keysThen?.has(object)) continue; // the store lost it after the key was written
      w.violated(
        "I1",
        `${object} names ${p.object}, which ${st ? "does not verify" : "is gone"}${keysThen ? " (damaged before this key was written: a save relied on a pack it did not check)" : " (no fault of the store's: kcache deleted or wrote it wrong)"}`,
      );
    }
  }
  for (const record of objects(root, "live").filter((o) => o.endsWith(".json"))) {
    const scope = record.split("/")[1] ?? "";
    const pack = record.replace(/\.json$/, ".tar.zst");
    const file = path.join(root, pack);
    if (damage.has(record) || damage.has(pack) || !fs.lstatSync(file, { throwIfNoEntry: false })?.isFile())
      continue;
    const name = decodeURIComponent(path.basename(record, ".json"));
    if (TRUSTED_SCOPES.has(scope) && !reference().trusted.has(name))
      w.violated(
        "I2",
        `live object ${record} in the default branch's scope holds ${name}, which no trusted job compiles`,
      );
    const members = extract(w, file);
    if (!members) continue;
    const found = entryAt(members, `triton/${name}/`);
    const differs = found.files.size
      ? entryDiffers(name, found)
      : `${record}'s pack holds no file of ${name}`;
    if (differs && (TRUSTED_SCOPES.has(scope) || !isPoison(found)))
      w.violated(TRUSTED_SCOPES.has(scope) ? "I2" : "I4", `live object ${record}: ${differs}`);
  }
  checkOutside(w);
}

/** One pack of a key: every entry the key names in it is what its producer wrote; in the default branch's scope, a trusted producer. */
function checkPack(
  w: World,
  object: string,
  scope: string,
  manifest: Manifest,
  packObject: string,
  file: string,
  digest: string,
): void {
  const members = extract(w, file, digest);
  if (!members) return;
  const index = manifest.packs.findIndex((p) => p.object === packObject);
  for (const e of manifest.entries.filter((x) => x.pack === index)) {
    const trusted = TRUSTED_SCOPES.has(scope);
    if (trusted && !reference().trusted.has(e.name)) {
      w.violated("I2", `${object} (the default branch's) holds ${e.name}, which no trusted job compiles`);
      continue;
    }
    const found = entryAt(members, `${e.cache}/${e.name}/`);
    const differs = entryDiffers(e.name, found);
    // A pull request's key may hold what its own job (or a process beside it) made of an entry: its
    // own scope. The default branch's may not.
    if (differs && (trusted || !isPoison(found))) w.violated(trusted ? "I2" : "I4", `${object}: ${differs}`);
  }
}

/** A pack's members, name -> bytes (read once per digest); null, with a violation, where it does not unpack. */
function extract(w: World, file: string, digest = sha256(file)): Map<string, Buffer> | null {
  const known = checkedPacks.get(digest);
  if (known) return known;
  const dir = fs.mkdtempSync(path.join(w.dir, "unpack-"));
  try {
    execFileSync("sh", ["-c", 'zstd -dc "$1" | tar -x -C "$2"', "sh", file, dir], { stdio: "pipe" });
  } catch (e) {
    w.violated("I1", `${file} does not unpack with zstd -d | tar -x: ${(e as Error).message.split("\n")[0]}`);
    fs.rmSync(dir, { recursive: true, force: true });
    return null;
  }
  const members = new Map<string, Buffer>();
  const walk = (rel: string) => {
    for (const d of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(r);
      else if (d.isFile()) members.set(r, fs.readFileSync(path.join(dir, r)));
      else w.violated("I3", `${file} holds ${r}, which is not a regular file`);
    }
  };
  walk("");
  fs.rmSync(dir, { recursive: true, force: true });
  for (const [name, data] of members)
    if (data.includes(w.secret))
      w.violated("I3", `${file} holds the secret from outside every cache (as ${name})`);
  checkedPacks.set(digest, members);
  return members;
}

function entryAt(members: Map<string, Buffer>, prefix: string) {
  const files = new Map<string, Buffer>();
  const groups = new Map<string, string[]>();
  for (const [name, data] of members) {
    if (!name.startsWith(prefix)) continue;
    const f = name.slice(prefix.length);
    if (f.includes("/")) continue;
    files.set(f, data);
  }
  return { files, groups };
}

function isPoison(e: { files: Map<string, Buffer> }): boolean {
  return [...e.files.values()].some((d) => d.includes(POISON));
}

/** I3: the folder outside every cache is as the world made it. */
function checkOutside(w: World): void {
  const names = fs.readdirSync(w.secretDir);
  if (names.join() !== "secret.txt")
    w.violated("I3", `the folder outside every cache now holds ${names.join(", ")}`);
  const text = fs.readFileSync(path.join(w.secretDir, "secret.txt"), "utf8");
  if (text !== `${w.secret}\n`) w.violated("I3", "a file outside every cache was written");
}

/**
 * I4 on a job's side: every entry in a folder a job got from kcache (a fresh runner's, where nothing
 * else wrote) is what its producer wrote, its group files naming that folder. `own`: poison the job
 * itself may have been given from its own scope (a pull request's). `interrupted`: the job was killed
 * mid-run, so an entry without its group file is its own compile cut off, not one it was given.
 */
export function checkJobFolder(
  w: World,
  folder: string,
  mayHoldOwnScopes: boolean,
  when: string,
  interrupted = false,
): void {
  let names: string[];
  try {
    names = fs.readdirSync(folder);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(".") || name.startsWith("tmp.")) continue;
    const p = path.join(folder, name);
    if (!fs.lstatSync(p).isDirectory()) continue;
    const found = readEntry(p);
    if (!found.files.size) continue;
    // The job's own compile, cut off by a kill: no group file yet, which Triton takes as no entry.
    if (interrupted && ![...found.files.keys()].some((f) => f.startsWith("__grp__"))) continue;
    // kcache run's tripwire for scripts that clear `$TRITON_CACHE_DIR/cache` (clear-trap.ts): no entry.
    if (name === "cache" && [...found.files.keys()].every((f) => f.startsWith(".kcache-tripwire"))) continue;
    const differs = entryDiffers(name, found, folder);
    if (differs && !(mayHoldOwnScopes && isPoison(found))) w.violated("I4", `${when}: ${differs}`);
  }
}

/** I5 for one command: it ended within its bound and said no internal error. */
export function checkRun(w: World, run: CliRun, what: string): void {
  if (run.killed) return;
  if (run.timedOut)
    w.violated("I5", `${what} (kcache ${run.args.join(" ")}) was still running after its bound`);
  const bug = INTERNAL.exec(run.stderr);
  if (bug)
    w.violated(
      "I5",
      `${what} (kcache ${run.args.join(" ")}) exited ${run.code} with an internal error: ${run.stderr.slice(Math.max(0, bug.index - 200), bug.index + 300)}`,
    );
}

function objects(root: string, top: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    let items: fs.Dirent[];
    try {
      items = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of items) {
      const r = `${rel}/${d.name}`;
      if (d.isDirectory()) walk(r);
      else out.push(r);
    }
  };
  walk(top);
  return out.sort();
}

/** Every object of a local store (its temporary folder left out), sorted. */
export function storeObjects(root: string): string[] {
  return ["manifests", "packs", "live", "runs", "leases", "condemned"].flatMap((t) => objects(root, t));
}

function sha256(file: string): string {
  return createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}
