import type { Command } from "commander";

/** `kcache prewarm --cpu` and its options (docs/cpu-prewarm.md), beside the prewarm's own. */
export function withCpuOptions(cmd: Command): Command {
  return cmd
    .option(
      "--cpu",
      "on a machine with no GPU, at a pull request's revision: compile the kernels of the GPU job's compile plan whose source changed, and save them into the pull request's scope (docs/cpu-prewarm.md)",
    )
    .option("--workers <n>", "--cpu: compile processes at once (default: the CPU count)")
    .option("--timeout <duration>", "--cpu: end the compile workers after this long (default 60m)");
}

/** `kcache prewarm`: the default branch's prewarm, or with --cpu a pull request's CPU prewarm. */
// biome-ignore lint/suspicious/noExplicitAny: commander's parsed options, checked by each command
export async function prewarmAction(o: any): Promise<void> {
  if (o.cpu) return (await import("./commands/cpu-prewarm.js")).cpuPrewarmCommand(o);
  return (await import("./commands/prewarm.js")).prewarmCommand(o);
}
