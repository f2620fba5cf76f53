import { stringify } from "yaml";
import type { Config } from "../config/resolve.js";
import { ConfigError } from "../errors.js";

/**
 * The one step that puts a profile into the workflow a maintainer already has: it replaces the step
 * that runs the profile's commands (a benchmark or test step), after checkout and the install
 * steps, and keeps the rest of the workflow (its triggers, `paths:` filters, concurrency, timeouts,
 * container, artifact uploads) as it is. What `kcache workflow --step` prints.
 */
export function workflowStep(config: Config, profileName: string, configPath: string): string {
  const profile = config.profiles[profileName];
  if (!profile)
    throw new ConfigError(
      `${config.source}: no profile "${profileName}"; profiles: ${Object.keys(config.profiles).join(", ") || "(none)"}`,
    );
  const step = [
    {
      name: `kcache run ${profileName}`,
      id: "kcache",
      uses: config.github.action,
      with: { mode: "run", profile: profileName, config: configPath },
    },
  ];
  return [
    `# Replaces the step that runs ${profileName}'s commands. Put it after checkout and the install steps:`,
    "# the key covers the software stack they installed. It restores the kernel cache, runs the",
    "# commands as timed stages, checks their result files and saves only when all passed.",
    "# Permissions: none beyond `contents: read` (GitHub's cache is reached with the runner's own token);",
    "# `kcache stats` and `kcache ls` on GitHub's cache also need `actions: read`.",
    stringify(step, { lineWidth: 0 }).trimEnd(),
    "",
  ].join("\n");
}
