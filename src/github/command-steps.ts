import type { CommandSpec } from "../config/profile-schema.js";

/**
 * A profile's commands as workflow steps; a parallel group's commands run one after another here.
 * The profile's and the command's source: scripts are sourced in each step's bash first.
 */
export function commandSteps(
  commands: (CommandSpec | { name: string; parallel: CommandSpec[]; devices?: string[] })[],
  profileSource: string[],
) {
  const flat = commands.flatMap((c) =>
    "parallel" in c
      ? c.parallel.map((p, i) => ({
          ...p,
          devices: p.devices ?? (c.devices ? [c.devices[i % c.devices.length] as string] : undefined),
        }))
      : [c],
  );
  return flat.map((c) => {
    const env: Record<string, string> = { ...c.env };
    if (c.devices)
      for (const v of ["CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"])
        env[v] = c.devices.join(",");
    const sources = [...profileSource, ...(c.source ?? [])];
    return {
      name: c.name,
      ...(sources.length ? { shell: "bash" } : {}),
      run: sources.length ? `${sources.map((f) => `source ${f}`).join("\n")}\n${c.run}` : c.run,
      ...(Object.keys(env).length ? { env } : {}),
      ...(c.workdir ? { "working-directory": c.workdir } : {}),
      ...(c.timeout ? { "timeout-minutes": Math.ceil(minutes(c.timeout)) } : {}),
    };
  });
}

function minutes(duration: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(duration);
  const n = Number(m?.[1] ?? 0);
  return { s: n / 60, m: n, h: n * 60, d: n * 1440, w: n * 10080 }[(m?.[2] ?? "m") as "s"] ?? n;
}
