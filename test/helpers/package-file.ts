import fs from "node:fs";
import path from "node:path";

/** A file of an installed npm package, found from this file's folder upwards (from test/ or build/test/). */
export function packageFile(pkg: string, file: string): string {
  let dir = import.meta.dirname;
  for (;;) {
    const candidate = path.join(dir, "node_modules", pkg, file);
    if (fs.existsSync(candidate)) return candidate;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`node_modules/${pkg}/${file} not found; run npm ci`);
    dir = up;
  }
}
