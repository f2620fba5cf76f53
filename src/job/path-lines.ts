import os from "node:os";
import path from "node:path";
import { checkCachePaths } from "../config/cache-paths.js";
import { type CacheConfig, DEFAULT_ENV } from "../config/resolve.js";
import { ConfigError } from "../errors.js";
import type { CacheKindName } from "../kinds/kind.js";
import { detectKind } from "../kinds/registry.js";
import { tritonKind } from "../kinds/triton.js";

/** Characters that make a path segment a pattern in @actions/glob (and so in actions/cache). */
const GLOB_CHARS = /[*?[]/;

/**
 * Caches from actions/cache-style `path` lines: one cache per line, `~` for the home folder, relative
 * paths from the working folder, globs (`~/.cache/*`: the folder before the first pattern is the
 * cache, the rest selects its entries) and `!` lines that leave matching files out of every cache.
 * `kind` "auto" lets each folder's layout decide (Triton's cache, or any folder as files).
 */
export function pathLineCaches(
  lines: string[],
  kind: CacheKindName | "auto",
  label: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): CacheConfig[] {
  const home = env.HOME || os.homedir();
  const absolute = (p: string) => path.resolve(cwd, p.replace(/^~(?=\/|$)/, home));
  const wanted = lines.map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  const exclude = wanted.filter((l) => l.startsWith("!")).map((l) => absolute(l.slice(1).trim()));
  const caches = wanted
    .filter((l) => !l.startsWith("!"))
    .map((line, i): CacheConfig => {
      const segments = absolute(line).split(path.sep);
      const first = segments.findIndex((s) => GLOB_CHARS.test(s));
      const root = first < 0 ? segments.join(path.sep) : segments.slice(0, first).join(path.sep) || path.sep;
      const include = first < 0 ? undefined : [segments.slice(first).join("/")];
      const name = kind === "auto" ? `path-${i + 1}` : i === 0 ? kind : `${kind}-${i + 1}`;
      return {
        name,
        kind,
        path: root,
        // Triton and Inductor find their caches through a variable; a folder of unknown kind gets none.
        env:
          i === 0 && kind === tritonKind.kind
            ? "TRITON_CACHE_DIR"
            : i === 0 && kind === "inductor"
              ? "TORCHINDUCTOR_CACHE_DIR"
              : kind === "auto"
                ? autoVariable(root, env, cwd)
                : undefined,
        ...(include ? { include } : {}),
        ...(exclude.length ? { exclude } : {}),
      };
    });
  // One folder per variable: a second folder the same variable would name gets none.
  for (const [i, c] of caches.entries())
    if (c.env && caches.findIndex((o) => o.env === c.env) !== i) caches[i] = { ...c, env: undefined };
  if (wanted.length && caches.length === 0)
    throw new ConfigError(`${label}: only "!" lines (${wanted.join(", ")}); add the folders to cache`);
  checkCachePaths(caches, (i) => `${label} ${caches[i]?.path}`, env, cwd);
  return caches;
}

/**
 * The variable that points a job at a folder of `kind: auto`, known from the path even where the
 * folder is empty: the folder a compiler's variable names now, the compiler's default folder
 * (Triton's `$TRITON_HOME/.triton/cache`, triton/runtime/cache.py's default_cache_dir; Inductor's
 * `<tempdir>/torchinductor_<user>`, torch/_inductor/runtime/cache_dir_utils.py), else the folder's
 * layout. None for any other folder: `isolate` cannot work there (build-job.ts refuses it).
 */
function autoVariable(root: string, env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  const home = env.HOME || os.homedir();
  const names = (value: string | undefined) =>
    !!value && path.resolve(cwd, value.replace(/^~(?=\/|$)/, home)) === root;
  const user = env.USER || env.LOGNAME || os.userInfo().username;
  if (names(env.TRITON_CACHE_DIR) || root === path.join(env.TRITON_HOME || home, ".triton", "cache"))
    return "TRITON_CACHE_DIR";
  if (
    names(env.TORCHINDUCTOR_CACHE_DIR) ||
    root === path.join(env.TMPDIR || "/tmp", `torchinductor_${user.replace(/[^A-Za-z0-9_.-]/g, "_")}`)
  )
    return "TORCHINDUCTOR_CACHE_DIR";
  const detected = detectKind(root);
  return detected ? DEFAULT_ENV[detected] : undefined;
}
