/**
 * `npm run bench` (fifth part): the Zstandard engines side by side, each through the kcache CLI end
 * to end on the small generated cache (110 MB, 220 entries): a full save into a fresh store and a
 * restore into a fresh folder, beside what actions/cache runs (`tar -c | zstd -T0 -3`, `zstd -d | tar
 * -x`) in the same round. zstd-napi is the prebuilt-addon path, `zlib` Node 24's built-in zstd (the
 * action's node24), `system` the zstd binary, `wasm` the WebAssembly compressor with fzstd's
 * decompressor (what Node 20 without a zstd binary gets). Rounds interleave the engines and the
 * reference; the median of per-round ratios to the reference. Not a test: nothing asserts a time.
 *
 *   KCACHE_BENCH_ROUNDS=3   KCACHE_TEST_NODE24=<node 24 binary> (else fetched as the fault suite does)
 */
import fs from "node:fs";
import path from "node:path";
import { node24 } from "../test/helpers/bare-runner.js";
import { config, kcache, q, sh, timed } from "./cli-timing.js";
import { DATA, generatedCache, rm, writeBenchmarkSection } from "./generated-caches.js";
import { machineLine, median } from "./measure.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "bin", "kcache.js");
const ROUNDS = Number(process.env.KCACHE_BENCH_ROUNDS ?? 3);

interface EngineRow {
  engine: string;
  node: string;
  saveSeconds: number;
  restoreSeconds: number;
  /** Medians of per-round ratios to tar + zstd in the same round. */
  saveRatio: number;
  restoreRatio: number;
}

function main() {
  const src = generatedCache("small");
  const work = fs.mkdtempSync(path.join(DATA, "engines-"));
  const n24 = node24();
  const engines: { engine: string; node: string }[] = [
    { engine: "napi", node: process.execPath },
    { engine: "zlib", node: n24 },
    { engine: "system", node: process.execPath },
    { engine: "wasm", node: process.execPath },
  ];
  const runs = new Map<
    string,
    { save: number[]; restore: number[]; saveRatio: number[]; restoreRatio: number[] }
  >();
  for (const e of engines) runs.set(e.engine, { save: [], restore: [], saveRatio: [], restoreRatio: [] });
  try {
    const archive = path.join(work, "cache.tar.zst");
    // Each engine's own store, seeded once, for its restores.
    for (const e of engines) {
      const cfg = config(work, src, path.join(work, `seed-${e.engine}`));
      kcache(
        BIN,
        ["save", "--revision", "f".repeat(40)],
        cfg,
        path.join(work, `seed-state-${e.engine}`),
        { KCACHE_ZSTD: e.engine },
        e.node,
      );
    }
    for (let i = 0; i < ROUNDS; i++) {
      const tarSave = timed(
        sh(`tar -C ${q(src)} --exclude=./.complete -cf - . | zstd -T0 -3 -q -f -o ${q(archive)}`),
      ).s;
      const dest = path.join(work, `tar-${i}`);
      fs.mkdirSync(dest);
      const tarRestore = timed(sh(`zstd -d -q -c ${q(archive)} | tar -x -C ${q(dest)}`)).s;
      // A different engine goes first each round.
      for (let k = 0; k < engines.length; k++) {
        const e = engines[(i + k) % engines.length] as (typeof engines)[number];
        const r = runs.get(e.engine) as NonNullable<ReturnType<typeof runs.get>>;
        const env = { KCACHE_ZSTD: e.engine };
        const saveCfg = config(work, src, path.join(work, `store-${e.engine}-${i}`));
        const s = kcache(
          BIN,
          ["save", "--revision", `${i}`.repeat(40)],
          saveCfg,
          path.join(work, `ss-${e.engine}-${i}`),
          env,
          e.node,
        ).s;
        const restCfg = config(
          work,
          path.join(work, `rest-${e.engine}-${i}`),
          path.join(work, `seed-${e.engine}`),
        );
        const t = kcache(
          BIN,
          ["restore", "--revision", "f".repeat(40)],
          restCfg,
          path.join(work, `rs-${e.engine}-${i}`),
          env,
          e.node,
        ).s;
        r.save.push(s);
        r.restore.push(t);
        r.saveRatio.push(s / tarSave);
        r.restoreRatio.push(t / tarRestore);
      }
    }
  } finally {
    rm(work);
  }
  const rows: EngineRow[] = engines.map((e) => {
    const r = runs.get(e.engine) as NonNullable<ReturnType<typeof runs.get>>;
    return {
      engine: e.engine,
      node: e.node === process.execPath ? process.version : "v24",
      saveSeconds: median(r.save),
      restoreSeconds: median(r.restore),
      saveRatio: median(r.saveRatio),
      restoreRatio: median(r.restoreRatio),
    };
  });
  const section = [
    `Measured by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: ${machineLine()}. The small`,
    `generated cache (110 MB, 220 entries), ${ROUNDS} rounds; each cell is the median seconds and, in`,
    "brackets, the median of per-round ratios to tar + zstd in the same round (below 1 is faster).",
    "",
    "| engine | Node | full save | restore |",
    "| --- | --- | ---: | ---: |",
    ...rows.map(
      (r) =>
        `| ${r.engine} | ${r.node} | ${r.saveSeconds.toFixed(2)} s (${r.saveRatio.toFixed(2)}x) | ${r.restoreSeconds.toFixed(2)} s (${r.restoreRatio.toFixed(2)}x) |`,
    ),
    "",
    "zstd-napi is a native addon built at install (multi-threaded compression); Node 24's zlib and the",
    "system binary need no addon; the WebAssembly engine needs nothing native at all, for Node 20 in a",
    "container without a zstd binary. It was chosen over a prebuilt addon because one file serves x64",
    "and arm64 alike (FLA's Ascend runners are arm64) and nothing is fetched at install.",
  ].join("\n");
  writeBenchmarkSection("engines", "Zstandard engines", section, rows);
  console.log(section);
}

main();
