import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * An autotune result's salt: the sources that can change a winner without changing Triton's key
 * (the Python around the @jit function: wrappers, heuristics, prune_configs_by), taken as every
 * Python file of the package that holds the kernel's module. Paths are relative to the job's folder
 * (the checkout), so a salt recorded on one runner is checked on another.
 */
export interface Salt {
  paths: string[];
  digest: string;
}

/** The salt of a kernel defined in `moduleFiles` (absolute), or null when none lies inside `workdir`. */
export function saltOf(workdir: string, moduleFiles: string[]): Salt | null {
  const root = path.resolve(workdir);
  const paths = [
    ...new Set(
      moduleFiles
        .map((f) => path.relative(root, path.dirname(path.resolve(f))))
        .filter((rel) => rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel)),
    ),
  ].sort();
  if (paths.length === 0) return null;
  return { paths: paths.map((p) => p.split(path.sep).join("/")), digest: packagesDigest(root, paths) };
}

/** Whether a salt still holds: the same package paths hash to the same digest in `workdir` now. */
export function saltHolds(workdir: string, salt: Salt | undefined): boolean {
  if (!salt) return true;
  const root = path.resolve(workdir);
  const safe = salt.paths.every((p) => !p.split("/").includes("..") && !path.isAbsolute(p));
  return safe && packagesDigest(root, salt.paths) === salt.digest;
}

/** sha256 over each package's Python files (sorted, by path and content); a missing package hashes as empty. */
function packagesDigest(root: string, paths: string[]): string {
  const h = createHash("sha256");
  for (const rel of paths) {
    const dir = path.join(root, ...rel.split("/"));
    let names: string[];
    try {
      names = fs
        .readdirSync(dir)
        .filter((n) => n.endsWith(".py"))
        .sort();
    } catch {
      names = [];
    }
    h.update(`${rel}\n`);
    for (const n of names) {
      let data: Buffer;
      try {
        data = fs.readFileSync(path.join(dir, n));
      } catch {
        continue;
      }
      h.update(`${n}\0${data.length}\0`);
      h.update(data);
    }
  }
  return h.digest("hex");
}
