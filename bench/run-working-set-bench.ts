/**
 * `npm run bench` (working sets): what a key holds after a default branch's history, with eviction
 * by use (the defaults) and without it (kcache before, and what actions/cache's restore-keys chain
 * keeps). 200 kernels; each commit replaces 1%, 5% or 20% of them; every commit runs on a fresh
 * runner at its own path, restores, reads exactly its live kernels (access times only, no hook),
 * compiles the rest and saves (test/fixtures/kernel-history.ts). Writes its table into BENCHMARKS.md
 * and its raw rows into bench/results/bench-working-set.json. Not a test.
 *
 *   KCACHE_BENCH_COMMITS=100 (default)
 */
import { execSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { save } from "../src/cache/save/save.js";
import { prune } from "../src/cache/usage/prune.js";
import { silentLog } from "../src/log.js";
import { decodeManifest } from "../src/manifest/manifest.js";
import { MANIFESTS, PACKS } from "../src/store/layout.js";
import { localStore } from "../src/store/local.js";
import type { Store } from "../src/store/store.js";
import { simulateHistory } from "../test/fixtures/kernel-history.js";
import { storeContext } from "../test/helpers/store-context.js";
import { DATA, rm, writeBenchmarkSection } from "./generated-caches.js";
import { machineLine } from "./measure.js";
import { type WorkingSetRow, workingSetTable } from "./tables.js";

const COMMITS = Number(process.env.KCACHE_BENCH_COMMITS ?? 100);
const KERNELS = 200;
const KEEP_OFF = { "keep-unused": { runs: 0, days: 0 } };

const packBytes = async (store: Store) => (await store.list(`${PACKS}/`)).reduce((n, o) => n + o.size, 0);

/** The compressed bytes the newest key's packs hold: what one key costs and a cold restore reads. */
async function newestKeyBytes(store: Store): Promise<number> {
  const objects = (await store.list(`${MANIFESTS}/`)).sort(
    (a, b) => a.modified.getTime() - b.modified.getTime(),
  );
  const newest = objects[objects.length - 1];
  if (!newest) return 0;
  const m = decodeManifest((await store.read(newest.name)) as Buffer, newest.name);
  return m.packs.reduce((n, p) => n + p.size, 0);
}

async function history(
  label: WorkingSetRow["label"],
  churn: number,
  keep: Record<string, unknown> | undefined,
) {
  const work = path.join(DATA, `working-set-${label}-${churn}`);
  rm(work);
  const store = localStore(path.join(work, "store"));
  let oneWorkingSet = 0;
  let folderArchive = 0;
  const commits = await simulateHistory({
    work,
    store,
    commits: COMMITS,
    kernels: KERNELS,
    churn,
    ...(keep ? { save: keep } : {}),
    afterSave: async (c, root, used) => {
      if (c !== COMMITS - 1) return;
      // One compressed working set: the live kernels alone, saved into an empty store.
      const alone = path.join(work, "alone");
      for (const d of used) fs.cpSync(d, path.join(alone, "triton", path.basename(d)), { recursive: true });
      const s = localStore(path.join(alone, "store"));
      await save(await storeContext(s, path.join(alone, "triton"), path.join(alone, "state")));
      oneWorkingSet = await packBytes(s);
      // actions/cache with restore-keys saves the folder as the job left it: one tar+zstd archive.
      folderArchive = Number(
        execSync(`tar -C "${root}" -cf - . | zstd -T0 -3 -q -c | wc -c`, { shell: "/bin/bash" })
          .toString()
          .trim(),
      );
    },
  });
  const lastCommit = commits[commits.length - 1] as (typeof commits)[number];
  const newest = await newestKeyBytes(store);
  await prune(store, { keep: 5, graceMs: 0 }, silentLog());
  const row: WorkingSetRow = {
    label,
    churn,
    commits: COMMITS,
    kernels: KERNELS,
    restoredOverLive: lastCommit.restoredBytes / lastCommit.liveBytes,
    restoredEntries: lastCommit.restoredEntries,
    newestKeyOverOne: newest / oneWorkingSet,
    storeAfterPruneOverOne: (await packBytes(store)) / oneWorkingSet,
    folderArchiveOverOne: folderArchive / oneWorkingSet,
    recompiled: commits.reduce((n, c) => n + c.recompiled, 0),
    evicted: commits.reduce((n, c) => n + c.save.usage.evicted.entries, 0),
    consolidations: commits.filter((c) => c.save.consolidated).length,
    source: lastCommit.save.usage.source,
  };
  console.error(JSON.stringify(row));
  rm(work);
  return row;
}

async function main() {
  const rows: WorkingSetRow[] = [];
  for (const churn of [0.01, 0.05, 0.2]) rows.push(await history("defaults", churn, undefined));
  rows.push(await history("off", 0.05, KEEP_OFF));
  const section = [
    `Measured by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: ${machineLine()}.`,
    `A job using ${KERNELS} Triton-shaped kernels (about 20 kB each) through ${COMMITS} default-branch commits, each`,
    "replacing a share of them; every commit on a fresh runner at its own path restores, reads exactly",
    "its live kernels (use learnt from access times alone, no hook), compiles the rest and saves.",
    '"Restored / live" is what the last commit\'s restore wrote over what its job used; "one working set"',
    "is the live kernels alone saved into an empty store. Eviction off is kcache before working sets,",
    "and what actions/cache keeps with restore-keys (its archive of the folder is the last column).",
    "",
    ...workingSetTable(rows),
    "",
    "Recompiled: kernels the job compiled although an earlier commit had compiled them, because the",
    "key had dropped them while still in use. The store is measured after `kcache prune --keep 5`.",
    "A key's packs still hold the entries it dropped until consolidation rewrites them (up to",
    "`save.max-dead-share`, half, of a pack may be dead), so the newest key's packs, which a restore",
    "downloads, are larger than what it writes.",
  ].join("\n");
  writeBenchmarkSection("working-set", "Working sets: restored bytes over what the job uses", section, rows);
  console.log(section);
}

await main();
