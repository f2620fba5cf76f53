import { spawn } from "node:child_process";
import path from "node:path";
import { ExitCode, KcacheError } from "../errors.js";

/** A `source:` script failed or is missing: the profile's commands would run in the wrong environment. */
export class SourceError extends KcacheError {
  constructor(message: string) {
    super(message, "EKCACHE_SOURCE", ExitCode.usage);
  }
}

/** Variables bash sets for itself: not part of what a script exports. */
const SHELL_OWN = new Set(["_", "SHLVL", "OLDPWD", "PWD"]);

/**
 * The environment after `source`-ing each script in bash, in order, starting from `env`: what the
 * scripts export (CANN's set_env.sh: ASCEND_TOOLKIT_HOME, ASCEND_HOME_PATH, PATH, LD_LIBRARY_PATH...)
 * and nothing bash sets for itself. The scripts' own output goes to `echo`. A script that is missing
 * or returns non-zero is a SourceError naming it, its exit status and its last lines of stderr.
 */
export function sourcedEnv(
  scripts: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  label: string,
): Promise<NodeJS.ProcessEnv> {
  const files = scripts.map((s) => path.resolve(cwd, s));
  const program = [
    'for f in "$@"; do',
    '  if [ ! -f "$f" ]; then echo "no such file" >&2; echo "$f" >&3; exit 97; fi',
    '  source "$f" >&2; rc=$?',
    '  if [ "$rc" -ne 0 ]; then echo "$f" >&3; exit "$rc"; fi',
    "done",
    "env -0",
  ].join("\n");
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", program, "bash", ...files], {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    let err = "";
    let failed = "";
    child.stdout?.on("data", (d: Buffer) => out.push(d));
    child.stderr?.on("data", (d: Buffer) => {
      err += d.toString();
    });
    (child.stdio[3] as NodeJS.ReadableStream).on("data", (d: Buffer) => {
      failed += d.toString();
    });
    child.on("error", (e) =>
      reject(new SourceError(`${label}: cannot run bash to source ${files.join(", ")}: ${e.message}`)),
    );
    child.on("close", (code) => {
      if (code !== 0) {
        const which = failed.trim() || files.join(", ");
        const tail = err.trim().split("\n").slice(-5).join("\n    ");
        const why = code === 97 ? "does not exist" : `returned ${code}`;
        reject(
          new SourceError(
            `${label}: source ${which} ${why}${tail && code !== 97 ? `:\n    ${tail}` : ""}; fix the script or the path in source:`,
          ),
        );
        return;
      }
      const result: NodeJS.ProcessEnv = {};
      for (const pair of Buffer.concat(out).toString("utf8").split("\0")) {
        const eq = pair.indexOf("=");
        if (eq <= 0) continue;
        const name = pair.slice(0, eq);
        if (SHELL_OWN.has(name) && !(name in env)) continue;
        result[name] = pair.slice(eq + 1);
      }
      resolve(result);
    });
  });
}

/** A command line that sources `scripts` in the command's own shell first, failing clearly if one fails. */
export function withSources(run: string, scripts: string[], cwd: string): string {
  if (scripts.length === 0) return run;
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const lines = scripts.map((s) => {
    const f = q(path.resolve(cwd, s));
    return `source ${f} || { rc=$?; echo "kcache: source ${f.replace(/"/g, '\\"')} failed (exit $rc)" >&2; exit $rc; }`;
  });
  return `${lines.join("\n")}\n${run}`;
}
