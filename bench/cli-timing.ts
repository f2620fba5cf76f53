/**
 * Timing a CLI the way a CI step runs it, for the benchmarks (run-speed-bench.ts, run-engine-bench.ts):
 * one process per operation, its wall time and peak RSS, and rounds interleaved so that neither side
 * always runs on a warmer machine.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * Runs a command under a small Python harness: wall seconds around the child alone, the peak RSS
 * of the largest process it waited for (getrusage of children, as GNU time's %M) and the CPU time of
 * them all, on any machine with python3 (the GPU machine has no GNU time).
 */
const HARNESS = `import resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
s = time.perf_counter() - t
if r.returncode:
    sys.stderr.write(r.stderr.decode(errors="replace")[-2000:])
    sys.exit(r.returncode)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(s, u.ru_maxrss * 1024, u.ru_utime + u.ru_stime)`;

/** One timed process: wall seconds, peak RSS in bytes, and CPU seconds (user and system, its children's too). */
export function timed(
  cmd: string[],
  env: NodeJS.ProcessEnv = process.env,
): { s: number; rss: number; cpu: number } {
  const r = spawnSync("python3", ["-c", HARNESS, ...cmd], { env, stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) throw new Error(`${cmd.join(" ")} failed (${r.status}): ${r.stderr}`);
  const [s, rss, cpu] = r.stdout.toString().trim().split(" ").map(Number) as [number, number, number];
  return { s, rss, cpu };
}
export const sh = (script: string) => ["bash", "-c", `set -o pipefail; ${script}`];
export const q = (p: string) => JSON.stringify(p);

let configs = 0;
/** A kcache.yml of its own for one cache path and store. */
export function config(dir: string, cache: string, store: string, kind = "triton"): string {
  const file = path.join(dir, `kcache-${configs++}.yml`);
  fs.writeFileSync(
    file,
    `caches:\n  - name: ${kind}\n    kind: ${kind}\n    path: ${cache}\nstore:\n  path: ${store}\nkey:\n  prefix: bench\n`,
  );
  return file;
}

/** One timed `kcache` command (`bin` is its entry script, `node` the Node.js that runs it). */
export function kcache(
  bin: string,
  args: string[],
  cfg: string,
  state: string,
  env: NodeJS.ProcessEnv = {},
  node = process.execPath,
): { s: number; rss: number } {
  return timed([node, bin, ...args, "-c", cfg], {
    ...process.env,
    KCACHE_STATE_DIR: state,
    GITHUB_REF: "refs/heads/main",
    ...env,
  });
}

/** Runs a then b (b then a on odd rounds), each `rounds` times. */
export function interleave<T>(rounds: number, a: (i: number) => T, b: (i: number) => T): { a: T[]; b: T[] } {
  const out = { a: [] as T[], b: [] as T[] };
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      out.a.push(a(i));
      out.b.push(b(i));
    } else {
      out.b.push(b(i));
      out.a.push(a(i));
    }
  }
  return out;
}
