import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** kcache's own version, from the nearest package.json above this file; recorded in every manifest. */
export const VERSION: string = readVersion();

function readVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "package.json");
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "kcache" && pkg.version) return pkg.version;
    }
    const up = path.dirname(dir);
    if (up === dir) return "0.0.0";
    dir = up;
  }
}
