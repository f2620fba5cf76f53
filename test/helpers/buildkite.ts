import path from "node:path";
import { parse } from "yaml";

/*
 * The part of Buildkite a generated pipeline relies on, done as the agent does it: the upload's
 * `$$` (a literal `$`), steps' `if:` conditions of build.source, build.branch,
 * pipeline.default_branch and build.pull_request.id, a step's command list joined into BUILDKITE_COMMAND, and a plugin's
 * settings turned into BUILDKITE_PLUGIN_<NAME>_* variables (agent/plugin/plugin.go: the name is the
 * location's last part, lowercased, non-alphanumerics to "-", "-buildkite-plugin" dropped; lists
 * become _0, _1...; BUILDKITE_PLUGIN_NAME and BUILDKITE_PLUGIN_CONFIGURATION beside them).
 */

export const PLUGIN_DIR = path.resolve(import.meta.dirname, "../../buildkite-plugin");

export interface Step {
  label: string;
  key: string;
  if?: string;
  command?: string[];
  plugins: Record<string, Record<string, unknown>>[];
  artifact_paths: string[];
  agents?: Record<string, string>;
  timeout_in_minutes?: number;
  soft_fail?: boolean;
  depends_on?: { step: string; allow_failure?: boolean }[];
}

/** The steps of an uploaded pipeline file. */
export function buildkiteSteps(text: string): Step[] {
  // Every `$` left after the upload's substitution was written `$$`: none may stand alone.
  expect$(text);
  return (parse(text.replace(/\$\$/g, "$")) as { steps: Step[] }).steps;
}

function expect$(text: string) {
  const lone = text.split("\n").filter((l) => !l.startsWith("#") && l.replace(/\$\$/g, "").includes("$"));
  if (lone.length) throw new Error(`a $ the upload would substitute: ${lone.join(" | ")}`);
}

/**
 * A step's `if:` for a build: comparisons of build.source, build.branch, pipeline.default_branch and
 * build.pull_request.id (null but in a pull request's build) with each other, "strings" and null,
 * joined by &&.
 */
export function stepRuns(step: Step, env: Record<string, string | undefined>): boolean {
  if (!step.if) return true;
  const pr = env.BUILDKITE_PULL_REQUEST;
  const names: Record<string, string | null | undefined> = {
    "build.source": env.BUILDKITE_SOURCE,
    "build.branch": env.BUILDKITE_BRANCH,
    "pipeline.default_branch": env.BUILDKITE_PIPELINE_DEFAULT_BRANCH,
    "build.pull_request.id": pr && pr !== "false" ? pr : null,
    null: null,
  };
  return step.if.split("&&").every((part) => {
    const m = /^\s*(\S+)\s*(==|!=)\s*(\S+)\s*$/.exec(part);
    if (!m) throw new Error(`not a condition this reader knows: ${part}`);
    const value = (operand: string) => {
      const s = /^"(.*)"$/.exec(operand);
      if (s) return s[1];
      if (!(operand in names)) throw new Error(`not a variable this reader knows: ${operand}`);
      return names[operand];
    };
    const equal = value(m[1] as string) === value(m[3] as string);
    return m[2] === "==" ? equal : !equal;
  });
}

/** The name the agent gives a plugin at this location (agent/plugin/plugin.go, Name and formatEnvKey). */
export function pluginName(location: string): string {
  const url = new URL(location.includes("://") ? location : `https://${location}`);
  const last = `${url.host}${url.pathname}`.split("/").pop() ?? "";
  return last
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "-")
    .replace(/-buildkite-plugin-git/g, "")
    .replace(/-buildkite-plugin/g, "")
    .toUpperCase()
    .replace(/-|\s/g, "_");
}

/** The variables the agent sets for a plugin's hooks from its settings. */
export function pluginEnv(location: string, settings: Record<string, unknown>): Record<string, string> {
  const name = pluginName(location);
  const env: Record<string, string> = {
    BUILDKITE_PLUGIN_NAME: name,
    BUILDKITE_PLUGIN_CONFIGURATION: JSON.stringify(settings),
  };
  const walk = (prefix: string, v: unknown) => {
    if (Array.isArray(v)) for (const [i, x] of v.entries()) walk(`${prefix}_${i}`, x);
    else if (v && typeof v === "object")
      for (const [k, x] of Object.entries(v)) walk(`${prefix}_${k.toUpperCase().replace(/-|\s/g, "_")}`, x);
    else env[prefix] = String(v);
  };
  for (const [k, v] of Object.entries(settings))
    walk(`BUILDKITE_PLUGIN_${name}_${k.toUpperCase().replace(/-|\s/g, "_")}`, v);
  return env;
}

/** Buildkite's variables for a build of a pipeline whose default branch is main. */
export function buildkiteVariables(
  sha: string,
  kind: "push" | "schedule" | "pull_request",
  pr = "7",
): Record<string, string> {
  return {
    CI: "true",
    BUILDKITE: "true",
    BUILDKITE_REPO: "git@github.com:org/kernels.git",
    BUILDKITE_PIPELINE_DEFAULT_BRANCH: "main",
    BUILDKITE_COMMIT: sha,
    BUILDKITE_BUILD_ID: `b-${Math.floor(Math.random() * 1e6)}`,
    BUILDKITE_TAG: "",
    BUILDKITE_SOURCE: kind === "schedule" ? "schedule" : "webhook",
    ...(kind === "pull_request"
      ? {
          BUILDKITE_PULL_REQUEST: pr,
          BUILDKITE_PULL_REQUEST_REPO: "git@github.com:org/kernels.git",
          BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main",
          BUILDKITE_BRANCH: "feature",
        }
      : { BUILDKITE_PULL_REQUEST: "false", BUILDKITE_PULL_REQUEST_REPO: "", BUILDKITE_BRANCH: "main" }),
  };
}
