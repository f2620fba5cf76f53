import os from "node:os";
import path from "node:path";

/**
 * Expands `${VAR}`, `${VAR:-default}` and a leading `~` in a configured path. Returns either the
 * expanded string or the name of the first variable that is unset and has no default.
 */
export function interpolate(
  value: string,
  env: NodeJS.ProcessEnv,
): { ok: true; value: string } | { ok: false; missing: string } {
  let missing: string | undefined;
  const expanded = value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_m, name: string, fallback?: string) => {
      const v = env[name];
      if (v !== undefined && v !== "") return v;
      if (fallback !== undefined) return fallback;
      missing ??= name;
      return "";
    },
  );
  if (missing) return { ok: false, missing };
  return { ok: true, value: expandHome(expanded, env) };
}

function expandHome(p: string, env: NodeJS.ProcessEnv): string {
  if (p === "~" || p.startsWith("~/")) return path.join(env.HOME || os.homedir(), p.slice(1));
  return p;
}
