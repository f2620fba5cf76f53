import fs from "node:fs";
import type { RunReport } from "../pipeline/run-profile.js";

/** Names of the step outputs kcache writes; the action's outputs use the same names. */
export const Outputs = {
  cacheHit: "cache-hit",
  matchedKey: "cache-matched-key",
  primaryKey: "cache-primary-key",
  kernelsCompiled: "kernels-compiled",
  kernelsLoaded: "kernels-loaded",
  saved: "saved",
} as const;

/** Appends `name=value` lines to $GITHUB_OUTPUT (multi-line values use a heredoc delimiter). */
export function writeOutputs(env: NodeJS.ProcessEnv, values: Record<string, string>): void {
  if (!env.GITHUB_OUTPUT) return;
  const lines = Object.entries(values).map(([k, v]) =>
    v.includes("\n") ? `${k}<<KCACHE_EOF\n${v}\nKCACHE_EOF` : `${k}=${v}`,
  );
  fs.appendFileSync(env.GITHUB_OUTPUT, `${lines.join("\n")}\n`);
}

/** Appends Markdown to the job's summary page when $GITHUB_STEP_SUMMARY is set. */
export function writeStepSummary(env: NodeJS.ProcessEnv, markdown: string): void {
  if (env.GITHUB_STEP_SUMMARY) fs.appendFileSync(env.GITHUB_STEP_SUMMARY, `${markdown}\n`);
}

/** `::error` / `::warning` workflow commands for failed checks, naming the result file. */
export function checkAnnotations(r: RunReport, cwd: string): string[] {
  return r.checks
    .filter((c) => !c.passed)
    .map((c) => {
      const level = c.severity === "error" ? "error" : "warning";
      const file = c.file ? ` file=${relative(c.file, cwd)},` : " ";
      return `::${level}${file}title=kcache check ${escapeProperty(c.name)}::${escapeData(c.message)}`;
    });
}

/** The outputs of a run, for $GITHUB_OUTPUT. */
export function runOutputs(r: RunReport): Record<string, string> {
  return {
    [Outputs.cacheHit]: String(Boolean(r.restore?.cacheHit)),
    [Outputs.primaryKey]: r.key,
    [Outputs.matchedKey]: r.restore?.matchedKey ?? "",
    [Outputs.kernelsCompiled]: String(r.kernels.compiled),
    [Outputs.kernelsLoaded]: String(r.kernels.loaded),
    [Outputs.saved]: String(r.save?.outcome === "saved"),
  };
}

function relative(file: string, cwd: string): string {
  return file.startsWith(`${cwd}/`) ? file.slice(cwd.length + 1) : file;
}

function escapeData(s: string): string {
  return s.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, "%3A").replace(/,/g, "%2C");
}
