/**
 * `npm run bench` (and bench/gpu/speed-on-device.sh on the GPU machine): issue 15's goal table. The
 * kcache CLI end to end (a process per operation, as a CI step runs it) beside what actions/cache
 * runs, `zstd -d | tar -x` and `tar -c | zstd -T0 -3`, on the same generated Triton-shaped caches,
 * interleaved round by round; the median of per-round ratios; peak RSS (getrusage); the fixed cost
 * of a command beside `node -e 0`; and the floors of this machine (zstd -d alone, tar -x of the
 * uncompressed tar, sha256 of its bytes). Every restore goes into a fresh folder and nothing is
 * deleted inside a timed round. Not a test: nothing here asserts a time.
 *
 *   KCACHE_BENCH_SIZES=small,large (default)   KCACHE_BENCH_ROUNDS=5
 *   KCACHE_BIN=<kcache entry script> (default bin/kcache.js)   KCACHE_BENCH_OUT=<raw JSON path>
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {
  chosenSizes,
  DATA,
  generatedCache,
  rm,
  type SIZES,
  writeBenchmarkSection,
} from "./generated-caches.js";
import { machineLine, median } from "./measure.js";
import { type SpeedRaw, speedTable } from "./tables.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const ROUNDS = Number(process.env.KCACHE_BENCH_ROUNDS ?? 5);
const BIN = process.env.KCACHE_BIN ?? path.join(ROOT, "bin", "kcache.js");
/**
 * Runs a command under a small Python harness: wall seconds around the child alone, and the peak RSS
 * of the largest process it waited for (getrusage of children, as GNU time's %M), on any machine
 * with python3 (the GPU machine has no GNU time).
 */
const HARNESS = `import resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
s = time.perf_counter() - t
if r.returncode:
    sys.stderr.write(r.stderr.decode(errors="replace")[-2000:])
    sys.exit(r.returncode)
print(s, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)`;

/** One timed process: wall seconds and peak RSS in bytes. */
function timed(cmd: string[], env: NodeJS.ProcessEnv = process.env): { s: number; rss: number } {
  const r = spawnSync("python3", ["-c", HARNESS, ...cmd], { env, stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) throw new Error(`${cmd.join(" ")} failed (${r.status}): ${r.stderr}`);
  const [s, rss] = r.stdout.toString().trim().split(" ").map(Number) as [number, number];
  return { s, rss };
}
const sh = (script: string) => ["bash", "-c", `set -o pipefail; ${script}`];
const q = (p: string) => JSON.stringify(p);

let configs = 0;
/** A kcache.yml of its own for one cache path and store. */
function config(dir: string, cache: string, store: string): string {
  const file = path.join(dir, `kcache-${configs++}.yml`);
  fs.writeFileSync(
    file,
    `caches:\n  - name: triton\n    kind: triton\n    path: ${cache}\nstore:\n  path: ${store}\nkey:\n  prefix: bench\n`,
  );
  return file;
}

function kcache(args: string[], cfg: string, state: string): { s: number; rss: number } {
  return timed([process.execPath, BIN, ...args, "-c", cfg], {
    ...process.env,
    KCACHE_STATE_DIR: state,
    GITHUB_REF: "refs/heads/main",
  });
}

/** Runs a then b (b then a on odd rounds), each `rounds` times. */
function interleave<T>(rounds: number, a: (i: number) => T, b: (i: number) => T): { a: T[]; b: T[] } {
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

function benchSize(size: keyof typeof SIZES): SpeedRaw["sizes"][number] {
  const src = generatedCache(size);
  const work = fs.mkdtempSync(path.join(DATA, `${size}-speed-`));
  const archive = path.join(work, "cache.tar.zst");
  const plainTar = path.join(work, "cache.tar");
  const store = path.join(work, "store");
  const bytes = Number(spawnSync("du", ["-sb", src]).stdout.toString().split("\t")[0]);
  const entries = fs.readdirSync(src).filter((n) => !n.startsWith(".")).length;
  try {
    const srcCfg = config(work, src, store);
    // Full saves: kcache into a fresh empty store each round, tar | zstd into a fresh file.
    const save = interleave(
      ROUNDS,
      (i) => {
        const cfg = config(work, src, path.join(work, `save-store-${i}`));
        return kcache(["save", "--revision", `${i}`.repeat(40)], cfg, path.join(work, `save-state-${i}`));
      },
      (i) =>
        timed(
          sh(`tar -C ${q(src)} --exclude=./.complete -cf - . | zstd -T0 -3 -q -o ${q(`${archive}.${i}`)}`),
        ),
    );
    fs.renameSync(`${archive}.0`, archive);
    // The store every restore reads.
    kcache(["save", "--revision", "f".repeat(40)], srcCfg, path.join(work, "seed-state"));
    const restore = interleave(
      ROUNDS,
      (i) => {
        const dest = path.join(work, `k-${i}`);
        const cfg = config(work, dest, store);
        const run = kcache(["restore", "--revision", "f".repeat(40)], cfg, path.join(work, `rs-${i}`));
        // A benchmark of a restore that restored nothing would measure nothing.
        const got = fs.readdirSync(dest).filter((n) => !n.startsWith(".")).length;
        if (got !== entries) throw new Error(`kcache restored ${got} of ${entries} entries into ${dest}`);
        return run;
      },
      (i) => {
        const dest = path.join(work, `t-${i}`);
        fs.mkdirSync(dest);
        return timed(sh(`zstd -d -q -c ${q(archive)} | tar -x -C ${q(dest)}`));
      },
    );
    // Floors: what this machine's disk and CPU allow at all.
    spawnSync("zstd", ["-d", "-q", "-f", archive, "-o", plainTar]);
    const floors = {
      zstdToNull: [] as number[],
      tarExtract: [] as number[],
      sha256: [] as number[],
    };
    for (let i = 0; i < ROUNDS; i++) {
      floors.zstdToNull.push(timed(sh(`zstd -d -q -c ${q(archive)} > /dev/null`)).s);
      const dest = path.join(work, `f-${i}`);
      fs.mkdirSync(dest);
      floors.tarExtract.push(timed(sh(`tar -x -C ${q(dest)} -f ${q(plainTar)}`)).s);
      floors.sha256.push(timed(["openssl", "dgst", "-sha256", plainTar]).s);
    }
    let fixed: SpeedRaw["sizes"][number]["fixed"] = null;
    if (size === "small") {
      // The fixed cost of a command: a key, a restore that misses, a save with nothing new.
      const missCfg = config(work, path.join(work, "miss-cache"), path.join(work, "empty-store"));
      const ncCache = path.join(work, "k-0");
      const ncCfg = config(work, ncCache, store);
      const ncState = path.join(work, "nc-state");
      kcache(["restore", "--revision", "f".repeat(40)], ncCfg, ncState);
      const node: number[] = [];
      const key: number[] = [];
      const miss: number[] = [];
      const nothingNew: number[] = [];
      for (let i = 0; i < ROUNDS * 2; i++) {
        node.push(timed([process.execPath, "-e", "0"]).s);
        key.push(kcache(["key", "--revision", "a".repeat(40)], srcCfg, path.join(work, "key-state")).s);
        miss.push(kcache(["restore", "--revision", "b".repeat(40)], missCfg, path.join(work, `miss-${i}`)).s);
        nothingNew.push(kcache(["save", "--revision", `${i}`.padStart(40, "c")], ncCfg, ncState).s);
      }
      fixed = { node, key, miss, nothingNew };
    }
    return {
      size,
      entries,
      bytes,
      save: { kcache: save.a, tar: save.b },
      restore: { kcache: restore.a, tar: restore.b },
      floors,
      fixed,
    };
  } finally {
    rm(work);
  }
}

const raw: SpeedRaw = {
  machine: machineLine(),
  command: process.env.KCACHE_BENCH_COMMAND ?? "npm run bench",
  rounds: ROUNDS,
  sizes: chosenSizes().map((s) => benchSize(s)),
};
if (process.env.KCACHE_BENCH_OUT) {
  fs.writeFileSync(process.env.KCACHE_BENCH_OUT, `${JSON.stringify(raw, null, 1)}\n`);
} else {
  writeBenchmarkSection(
    "speed",
    "Restore and save end to end against tar + zstd (issue 15's goal table)",
    speedTable(raw).join("\n"),
    raw,
  );
}
for (const line of speedTable(raw)) console.log(line);
console.log(
  `median kcache restore RSS: ${raw.sizes.map((s) => median(s.restore.kcache.map((r) => r.rss)) / 1e6)}`,
);
