import path from "node:path";
import type { CommandSpec } from "../config/profile-schema.js";
import { shellWord } from "./shell-word.js";

/**
 * A profile's commands as workflow steps, meaning what they mean under `kcache run`: each step in the
 * folder kcache run gives the command (the profile's workdir, then the command's), the profile's and
 * the command's source: scripts (relative to the profile's workdir) sourced first in bash, quoted, and
 * kcache.yml's text taken literally: GitHub evaluates `${{ }}` in a step's run and env, which kcache run
 * never does, so each is written as an expression of the text itself. A parallel group's commands run
 * one after another here.
 */
export function commandSteps(
  commands: (CommandSpec | { name: string; parallel: CommandSpec[]; devices?: string[] })[],
  profile: { source: string[]; workdir?: string | undefined },
) {
  const flat = commands.flatMap((c) =>
    "parallel" in c
      ? c.parallel.map((p, i) => ({
          ...p,
          devices: p.devices ?? (c.devices ? [c.devices[i % c.devices.length] as string] : undefined),
        }))
      : [c],
  );
  const base = profile.workdir ?? ".";
  return flat.map((c) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(c.env ?? {})) env[k] = literal(v);
    if (c.devices)
      for (const v of ["CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"])
        env[v] = c.devices.join(",");
    const dir = c.workdir ? path.posix.join(base, c.workdir) : base;
    // Each script as kcache run finds it (from the profile's workdir), from the step's own folder.
    const sources = [...profile.source, ...(c.source ?? [])].map((f) =>
      shellWord(f.startsWith("/") ? f : path.posix.relative(dir, path.posix.join(base, f)) || "."),
    );
    const run = literal(c.run);
    return {
      name: c.name,
      ...(sources.length ? { shell: "bash" } : {}),
      run: sources.length ? `${sources.map((f) => `source ${f}`).join("\n")}\n${run}` : run,
      ...(Object.keys(env).length ? { env } : {}),
      ...(dir !== "." ? { "working-directory": dir } : {}),
      ...(c.timeout ? { "timeout-minutes": Math.ceil(minutes(c.timeout)) } : {}),
    };
  });
}

/** kcache.yml's text as GitHub must leave it: each `${{` written as an expression that gives `${{`. */
export function literal(text: string): string {
  return text.replaceAll("${{", "${{ '${{' }}");
}

function minutes(duration: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(duration);
  const n = Number(m?.[1] ?? 0);
  return { s: n / 60, m: n, h: n * 60, d: n * 1440, w: n * 10080 }[(m?.[2] ?? "m") as "s"] ?? n;
}
