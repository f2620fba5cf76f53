import path from "node:path";
import { ConfigError } from "../errors.js";

/**
 * A save takes every entry of a cache folder and a trim removes them, so a cache is a folder of its
 * own, never one that holds anything else: the root, the home folder, or the checkout; and no two
 * caches may overlap. `field(i)` names the i-th path in errors.
 */
export function checkCachePaths(
  caches: { path: string }[],
  field: (i: number) => string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): void {
  const home = env.HOME ? path.resolve(env.HOME) : null;
  caches.forEach((c, i) => {
    const holdsCwd = cwd === c.path || cwd.startsWith(`${c.path}${path.sep}`);
    if (c.path === path.parse(c.path).root || c.path === home || holdsCwd) {
      throw new ConfigError(
        `${field(i)}: ${c.path} is ${holdsCwd ? "the working folder or a folder above it" : c.path === home ? "the home folder" : "the filesystem root"}; a cache needs a folder of its own (a save takes everything in it, a trim removes entries)`,
      );
    }
  });
  caches.forEach((c, i) => {
    caches.slice(0, i).forEach((other, j) => {
      const inside = (a: string, b: string) => a === b || a.startsWith(`${b}${path.sep}`);
      if (inside(c.path, other.path) || inside(other.path, c.path)) {
        throw new ConfigError(
          `${field(i)}: ${c.path} ${c.path === other.path ? "is the same folder as" : "overlaps"} ${field(j).replace(/^.*: /, "")} (${other.path}); give each cache its own folder`,
        );
      }
    });
  });
}
