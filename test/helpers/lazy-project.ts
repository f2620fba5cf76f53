import { SIM } from "./python-sim.js";

/**
 * kcache.yml of a project whose Triton cache (at $CACHE_ROOT) is restored lazily (unless `eager`:
 * then only runs given --lazy restore it lazily), with the store's
 * YAML lines as given and one profile per entry of `profiles`: the simulated workload with those
 * arguments ("8 2": 8 kernels, 2 autotuned), after the commands of `before` (e.g. a step that marks
 * the moment a fault proxy turns on); or, given `{ run }`, that one command alone.
 */
export function lazyKcacheYml(opts: {
  store: string[];
  profiles: Record<string, string | { run: string }>;
  before?: { name: string; run: string }[];
  compileMs?: number;
  eager?: boolean;
}): string {
  const profile = (name: string, args: string | { run: string }) =>
    typeof args === "string"
      ? workload(name, args)
      : [`  ${name}:`, "    commands:", "      - name: command", `        run: ${args.run}`];
  const workload = (name: string, args: string) => [
    `  ${name}:`,
    "    env:",
    `      PYTHONPATH: ${SIM}`,
    `      TRITON_SIM_COMPILE_MS: "${opts.compileMs ?? 20}"`,
    "    commands:",
    ...(opts.before ?? []).flatMap((c) => [`      - name: ${c.name}`, `        run: ${c.run}`]),
    "      - name: workload",
    `        run: python3 ${SIM}/workload.py ${args}`,
  ];
  return [
    "caches:",
    "  - name: triton",
    "    kind: triton",
    "    path: ${CACHE_ROOT}",
    ...(opts.eager ? [] : ["    restore: lazy"]),
    ...opts.store,
    "key:\n  prefix: sim-bench",
    "profiles:",
    ...Object.entries(opts.profiles).flatMap(([name, args]) => profile(name, args)),
    "",
  ].join("\n");
}
