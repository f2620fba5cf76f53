import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The folder holding kcache's sitecustomize.py, shipped in the package's python/ folder. */
export function hookDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "python", "kcache_hook");
    if (fs.existsSync(path.join(candidate, "sitecustomize.py"))) return candidate;
    const up = path.dirname(dir);
    if (up === dir) throw new Error("kcache's python/kcache_hook folder is missing from the installation");
    dir = up;
  }
}

/** Environment that makes a command's Python processes report kernel loads to `file`. */
export function telemetryEnv(env: NodeJS.ProcessEnv, file: string): NodeJS.ProcessEnv {
  const existing = env.PYTHONPATH ? `${path.delimiter}${env.PYTHONPATH}` : "";
  return { ...env, PYTHONPATH: `${hookDir()}${existing}`, KCACHE_TELEMETRY_FILE: file };
}
