import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** A file of the package's python/ folder (`parts` below it), found from this module up; an Error where it is missing. */
export function shippedPython(...parts: string[]): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "python", ...parts);
    if (fs.existsSync(candidate)) return candidate;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`kcache's python/${parts[0]} folder is missing from the installation`);
    dir = up;
  }
}

/** The folder holding kcache's sitecustomize.py, shipped in the package's python/ folder. */
export function hookDir(): string {
  return path.dirname(shippedPython("kcache_hook", "sitecustomize.py"));
}

/** A PYTHONPATH with kcache's hook first, then `pythonPath` (what the job had) as it was: as it is where the hook is first already. */
export function hookFirstOn(pythonPath: string | undefined): string {
  if (!pythonPath) return hookDir();
  return pythonPath.split(path.delimiter)[0] === hookDir()
    ? pythonPath
    : `${hookDir()}${path.delimiter}${pythonPath}`;
}

/**
 * Environment that makes a command's Python processes report kernel loads to `file`. Under
 * `autotune: fresh` (KCACHE_AUTOTUNE=fresh) the hook also makes each process tune for itself: an
 * autotune result another process of the job wrote is not served to it.
 */
export function telemetryEnv(
  env: NodeJS.ProcessEnv,
  file: string,
  autotune: "pinned" | "fresh" | "any" = "any",
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {
    ...env,
    PYTHONPATH: hookFirstOn(env.PYTHONPATH),
    KCACHE_TELEMETRY_FILE: file,
  };
  if (autotune === "fresh") out.KCACHE_AUTOTUNE = "fresh";
  else delete out.KCACHE_AUTOTUNE;
  return out;
}
