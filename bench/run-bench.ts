/**
 * `npm run bench`: kcache's restore and saves beside what a user would otherwise run, actions/cache's
 * `tar -cf - | zstd -T0` and `zstd -d | tar -x`, on the same generated Triton-shaped caches, in the
 * same run. Writes the table into BENCHMARKS.md. Not a test: nothing here asserts a time.
 *
 *   KCACHE_BENCH_SIZES=small,large (default)   KCACHE_BENCH_ROUNDS=5
 */
import { execSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { restore } from "../src/cache/restore/restore.js";
import { save } from "../src/cache/save/save.js";
import { resolveConfig } from "../src/config/load.js";
import { jobContext } from "../src/job/build-context.js";
import { silentLog } from "../src/log.js";
import { rng, tritonKeyName, writeKernelEntry } from "../test/fixtures/triton-cache.js";
import {
  BENCH_STACK,
  chosenSizes,
  DATA,
  generatedCache,
  rm,
  SIZES,
  writeBenchmarkSection,
} from "./generated-caches.js";
import { machineLine, paired } from "./measure.js";
import { type StoreRow, storeTable } from "./tables.js";

const chosen = chosenSizes();
const ROUNDS = Number(process.env.KCACHE_BENCH_ROUNDS ?? 5);

const du = (p: string) =>
  Number(
    execSync(`du -sb ${JSON.stringify(p)}`)
      .toString()
      .split("\t")[0],
  );
const tarZstd = (dir: string, archive: string): void => {
  execSync(`tar -C ${JSON.stringify(dir)} -cf - . | zstd -T0 -3 -q -o ${JSON.stringify(archive)} -f`, {
    shell: "/bin/bash",
  });
};

async function context(work: string, cacheDir: string, revision: string, state: string) {
  const config = resolveConfig(
    {
      caches: [{ name: "triton", kind: "triton", path: cacheDir }],
      store: { path: path.join(work, "store") },
      key: { prefix: "bench" },
    },
    "bench",
    { HOME: work },
    work,
  );
  return jobContext({
    config,
    log: silentLog(),
    env: { HOME: work, KCACHE_STATE_DIR: state, GITHUB_REF: "refs/heads/main" },
    cwd: work,
    revision,
    stack: BENCH_STACK,
  });
}

type Row = StoreRow;

async function benchSize(size: keyof typeof SIZES): Promise<Row[]> {
  const src = generatedCache(size);
  fs.rmSync(path.join(src, ".complete"));
  const bytes = du(src);
  const work = fs.mkdtempSync(path.join(DATA, `${size}-run-`));
  const archive = path.join(work, "cache.tar.zst");
  const rows: Row[] = [];
  try {
    // Full save: kcache (into an empty store) vs tar | zstd -T0.
    let fullBytes = 0;
    const full = await paired(
      ROUNDS,
      async (i) => {
        fullBytes = (
          await save(await context(work, src, `${i}`.repeat(40), path.join(work, `state-full-${i}`)))
        ).bytesUploaded;
      },
      () => tarZstd(src, archive),
      (which) => which === "a" && rm(path.join(work, "store")),
    );
    const tarBytes = fs.statSync(archive).size;
    rows.push({ size, op: "full save", kcache: full.a, tar: full.b, kcacheBytes: fullBytes, tarBytes });

    // Restore into an empty folder elsewhere.
    const dest = path.join(work, "restored");
    const rest = await paired(
      ROUNDS,
      async (i) => {
        await restore(await context(work, dest, "9".repeat(40), path.join(work, `state-r-${i}`)));
      },
      () => {
        fs.mkdirSync(dest, { recursive: true });
        execSync(`zstd -d -q -c ${JSON.stringify(archive)} | tar -C ${JSON.stringify(dest)} -xf -`, {
          shell: "/bin/bash",
        });
      },
      () => rm(dest),
    );
    const stored = fs
      .readdirSync(path.join(work, "store", "packs"), { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .reduce((s, d) => s + fs.statSync(path.join(d.parentPath, d.name)).size, 0);
    rows.push({ size, op: "restore", kcache: rest.a, tar: rest.b, kcacheBytes: stored, tarBytes });

    // No-change save right after a restore, at the next revision; actions/cache would re-archive all.
    rm(dest);
    await restore(await context(work, dest, "9".repeat(40), path.join(work, "state-nc")));
    let ncBytes = -1;
    const nc = await paired(
      ROUNDS,
      async (i) => {
        const r = await save(await context(work, dest, `a${i}`.padEnd(40, "0"), path.join(work, "state-nc")));
        if (r.outcome !== "nothing-new") throw new Error(`no-change save did ${r.outcome}`);
        ncBytes = r.bytesUploaded;
      },
      () => tarZstd(dest, archive),
    );
    rows.push({
      size,
      op: "save, nothing new",
      kcache: nc.a,
      tar: nc.b,
      kcacheBytes: ncBytes,
      tarBytes: fs.statSync(archive).size,
    });

    // 5% new entries: kcache packs only those; actions/cache re-archives everything.
    const extra = Math.ceil(SIZES[size].entries * 0.05);
    const perEntry = Math.floor(SIZES[size].bytes / SIZES[size].entries);
    let deltaBytes = 0;
    const delta = await paired(
      ROUNDS,
      async (i) => {
        const r = await save(
          await context(work, dest, `b${i}`.padEnd(40, "0"), path.join(work, `state-d-${i}`)),
        );
        if (r.outcome !== "saved") throw new Error(`delta save did ${r.outcome}`);
        deltaBytes = r.bytesUploaded;
      },
      () => tarZstd(dest, archive),
      (which, i) => {
        // Each round: the restored cache plus a fresh 5% of new entries.
        if (which === "b") return;
        rm(path.join(work, `state-d-${i}`));
        fs.cpSync(path.join(work, "state-nc"), path.join(work, `state-d-${i}`), { recursive: true });
        for (const n of fs.readdirSync(dest)) if (n.startsWith("NEW")) rm(path.join(dest, n));
        const r = rng(1000 + i);
        for (let k = 0; k < extra; k++)
          writeKernelEntry(dest, `NEW${tritonKeyName(`r${i}-${k}`).slice(3)}`, `new_${k}`, perEntry, r);
      },
    );
    rows.push({
      size,
      op: "save, 5% new entries",
      kcache: delta.a,
      tar: delta.b,
      kcacheBytes: deltaBytes,
      tarBytes: fs.statSync(archive).size,
    });
    console.error(`${size}: ${(bytes / 1e6).toFixed(0)} MB in ${SIZES[size].entries} entries done`);
    return rows.map((r) => ({
      ...r,
      size: `${size} (${SIZES[size].entries} entries, ${(bytes / 1e6).toFixed(0)} MB)`,
    }));
  } finally {
    fs.writeFileSync(path.join(src, ".complete"), "");
    rm(work);
  }
}

async function main() {
  fs.mkdirSync(DATA, { recursive: true });
  const rows: Row[] = [];
  for (const s of chosen) rows.push(...(await benchSize(s)));
  const lines = storeTable(rows);
  const section = [
    `Measured by \`npm run bench\` (${ROUNDS} rounds each, KCACHE_BENCH_SIZES=${chosen.join(",")}) on ${new Date().toISOString().slice(0, 10)}:`,
    `${machineLine()}.`,
    "",
    ...lines,
    "",
    "tar+zstd is `tar -cf - . | zstd -T0 -3` and `zstd -d | tar -xf -`, as actions/cache runs them; for",
    '"save, nothing new" the tar column is the full re-archive actions/cache would upload again. kcache',
    "times are the library calls (restore, save) with the stack given; the CLI adds Node start-up and the",
    "stack probe (see `kcache stack --json`'s probeMs).",
  ].join("\n");
  writeBenchmarkSection("store", "Local store vs tar + zstd", section, rows);
  console.log(section);
}

await main();
