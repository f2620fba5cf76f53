import fs from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { type CliResult, startCli } from "./cli.js";
import { SIM } from "./python-sim.js";
import { tempDir } from "./sandbox.js";

/** A profile of a live project: its commands (shell lines) and whether it saves. */
export interface LiveProfile {
  commands: string[];
  save?: "never";
  prefix?: string;
}

/**
 * A project whose Triton cache (at $CACHE_ROOT) lies beside a local store with `live: true`, restored
 * lazily when `lazy`; runners are folders of their own (their cache and state). Each profile's
 * commands run with the simulated Triton on PYTHONPATH.
 */
export function liveProject(opts: { lazy?: boolean; profiles: Record<string, LiveProfile> }) {
  const dir = tempDir("kcache-live");
  const store = path.join(dir, "store");
  const profile = ([name, p]: [string, LiveProfile]) => [
    `  ${name}:`,
    ...(p.prefix ? [`    prefix: ${p.prefix}`] : []),
    ...(p.save ? [`    save: ${p.save}`] : []),
    `    env:\n      PYTHONPATH: ${SIM}\n      TRITON_SIM_COMPILE_MS: "20"`,
    "    commands:",
    ...p.commands.flatMap((run, i) => [`      - name: c${i}`, `        run: ${JSON.stringify(run)}`]),
  ];
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:\n  - name: triton\n    kind: triton\n    path: ${CACHE_ROOT}",
      ...(opts.lazy ? ["    restore: lazy"] : []),
      `store:\n  path: ${store}\n  live: true`,
      "key:\n  prefix: live-bench",
      "profiles:",
      ...Object.entries(opts.profiles).flatMap(profile),
      "",
    ].join("\n"),
  );
  const env = (runner: string, sha: string): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: dir,
    CACHE_ROOT: path.join(dir, runner, "triton"),
    KCACHE_STATE_DIR: path.join(dir, runner, "state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: "refs/heads/main",
    GITHUB_EVENT_NAME: "push",
    GITHUB_SHA: sha.repeat(40),
  });
  /** `kcache run` of a profile on a runner at a revision: it must exit 0; its report and log. */
  const run = async (name: string, runner: string, sha: string) => {
    const r = await runBounded(["run", "--profile", name, "--json"], { env: env(runner, sha), cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    return { report: JSON.parse(r.stdout), stderr: r.stderr };
  };
  return { dir, store, env, run };
}

/** Live objects in a local store: each record's file and its pack's file, by entry name. */
export function liveObjectsIn(store: string): Map<string, { record: string; pack: string }> {
  const out = new Map<string, { record: string; pack: string }>();
  const live = path.join(store, "live");
  if (!fs.existsSync(live)) return out;
  for (const f of fs.readdirSync(live, { recursive: true, withFileTypes: true })) {
    if (!f.name.endsWith(".json")) continue;
    const record = path.join(f.parentPath, f.name);
    out.set(f.name.slice(0, -".json".length), { record, pack: record.replace(/\.json$/, ".tar.zst") });
  }
  return out;
}

/**
 * Runs the built `kcache` and kills it after `ms` (a generous bound: a hang, not a slow machine):
 * `timedOut` says whether it had to be killed.
 */
export async function runBounded(
  args: string[],
  opts: { env: NodeJS.ProcessEnv; cwd: string },
  ms = 180_000,
): Promise<CliResult & { timedOut: boolean }> {
  const child = startCli(args, opts);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill();
  }, ms);
  try {
    const r = await child.promise;
    if (timedOut) throw new Error(`kcache ${args.join(" ")} did not end within ${ms / 1000} s`);
    return { ...r, timedOut };
  } finally {
    clearTimeout(timer);
  }
}
