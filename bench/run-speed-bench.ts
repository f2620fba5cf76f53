/**
 * `npm run bench` (and bench/gpu/speed-on-device.sh on the GPU machine): issue 15's goal table. The
 * kcache CLI end to end (a process per operation, as a CI step runs it) beside what actions/cache
 * runs, `zstd -d | tar -x` and `tar -c | zstd -T0 -3`, on the same generated Triton-shaped caches,
 * interleaved round by round; the median of per-round ratios; peak RSS (getrusage); the fixed cost
 * of a command beside `node -e 0`; and the floors of this machine (zstd -d alone, tar -x of the
 * uncompressed tar, sha256 of its bytes). Every restore goes into a fresh folder and nothing is
 * deleted inside a timed round. Not a test: nothing here asserts a time.
 *
 *   KCACHE_BENCH_SIZES=small,large,inductor (default)   KCACHE_BENCH_ROUNDS=5
 *   KCACHE_BENCH_INDUCTOR_CACHE=<a torch.compile cache folder> (default: one generated in its shape)
 *   KCACHE_BIN=<kcache entry script> (default bin/kcache.js)   KCACHE_BENCH_OUT=<raw JSON path>
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { config as configOf, interleave, kcache as kcacheWith, q, sh, timed } from "./cli-timing.js";
import {
  chosenSizes,
  DATA,
  generatedCache,
  inductorCache,
  inductorChosen,
  rm,
  writeBenchmarkSection,
} from "./generated-caches.js";
import { machineLine, median } from "./measure.js";
import { type SpeedRaw, speedTable } from "./tables.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const ROUNDS = Number(process.env.KCACHE_BENCH_ROUNDS ?? 5);
const BIN = process.env.KCACHE_BIN ?? path.join(ROOT, "bin", "kcache.js");
const kcache = (args: string[], cfg: string, state: string) => kcacheWith(BIN, args, cfg, state);
/** One cache's rows: full saves and restores beside tar + zstd, floors, and (small) the fixed costs. */
function benchCache(size: string, src: string, kind = "triton", source?: string): SpeedRaw["sizes"][number] {
  const config = (dir: string, cache: string, store: string) => configOf(dir, cache, store, kind);
  const work = fs.mkdtempSync(path.join(DATA, `${size}-speed-`));
  const archive = path.join(work, "cache.tar.zst");
  const plainTar = path.join(work, "cache.tar");
  const store = path.join(work, "store");
  const bytes = Number(spawnSync("du", ["-sb", src]).stdout.toString().split("\t")[0]);
  // What a restore brings back, counted as files (an Inductor cache's entries are nested).
  const files = (dir: string) =>
    fs
      .readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && !e.name.startsWith(".")).length;
  const entries =
    kind === "triton" ? fs.readdirSync(src).filter((n) => !n.startsWith(".")).length : files(src);
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
    // What a restore brings back: every entry of a generated cache; of torch.compile's own, what its
    // save kept (not its locks or temp files), found by one restore outside the timed rounds.
    const probe = path.join(work, "probe");
    kcache(
      ["restore", "--revision", "f".repeat(40)],
      config(work, probe, store),
      path.join(work, "probe-state"),
    );
    const expected = kind === "triton" ? entries : files(probe);
    if (expected < entries * 0.9)
      throw new Error(`kcache restored ${expected} of the ${entries} files of ${src}`);
    const restore = interleave(
      ROUNDS,
      (i) => {
        const dest = path.join(work, `k-${i}`);
        const cfg = config(work, dest, store);
        const run = kcache(["restore", "--revision", "f".repeat(40)], cfg, path.join(work, `rs-${i}`));
        // A benchmark of a restore that restored nothing would measure nothing.
        const got =
          kind === "triton" ? fs.readdirSync(dest).filter((n) => !n.startsWith(".")).length : files(dest);
        if (got !== expected) throw new Error(`kcache restored ${got} of ${expected} into ${dest}`);
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
      const missKept: number[] = [];
      const nothingNew: number[] = [];
      for (let i = 0; i < ROUNDS * 2; i++) {
        node.push(timed([process.execPath, "-e", "0"]).s);
        key.push(kcache(["key", "--revision", "a".repeat(40)], srcCfg, path.join(work, "key-state")).s);
        // A job's first command (a state folder of its own: nothing kept from an earlier command) ...
        miss.push(kcache(["restore", "--revision", "b".repeat(40)], missCfg, path.join(work, `miss-${i}`)).s);
        // ... and a later one, or any on a runner that keeps its state folder.
        missKept.push(
          kcache(["restore", "--revision", "b".repeat(40)], missCfg, path.join(work, "miss-kept")).s,
        );
        nothingNew.push(kcache(["save", "--revision", `${i}`.padStart(40, "c")], ncCfg, ncState).s);
      }
      fixed = { node, key, miss, missKept, nothingNew };
    }
    return {
      size,
      ...(source ? { source } : {}),
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
  sizes: [
    ...chosenSizes().map((s) => benchCache(s, generatedCache(s))),
    ...(inductorChosen() ? [inductorRow()] : []),
  ],
};

function inductorRow(): SpeedRaw["sizes"][number] {
  const { dir, source } = inductorCache();
  return benchCache("inductor", dir, "inductor", source);
}
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
