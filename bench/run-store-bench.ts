/**
 * `npm run bench` (second part): kcache through the S3 store (s3rver, a real S3-compatible server
 * process, on loopback) beside the local store and `tar | zstd -T0` to a file, on the generated
 * Triton-shaped caches. Writes its table into BENCHMARKS.md. Not a test: nothing asserts a time.
 *
 *   KCACHE_BENCH_SIZES=small,large (default)   KCACHE_BENCH_S3_ROUNDS=3
 */
import { execSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { restore } from "../src/cache/restore/restore.js";
import { save } from "../src/cache/save/save.js";
import { localStore } from "../src/store/local.js";
import { DEFAULT_S3, s3Store } from "../src/store/s3.js";
import type { Store } from "../src/store/store.js";
import { rng, tritonKeyName, writeKernelEntry } from "../test/fixtures/triton-cache.js";
import { S3RVER_CREDENTIALS, startS3rver } from "../test/helpers/s3rver.js";
import { storeContext } from "../test/helpers/store-context.js";
import {
  BENCH_STACK,
  chosenSizes,
  DATA,
  generatedCache,
  rm,
  SIZES,
  writeBenchmarkSection,
} from "./generated-caches.js";
import { machineLine } from "./measure.js";
import { type S3Row, s3Table } from "./tables.js";

const chosen = chosenSizes();
const ROUNDS = Number(process.env.KCACHE_BENCH_S3_ROUNDS ?? 3);

const ctx = (store: Store, cache: string, state: string, revision: string) =>
  storeContext(store, cache, state, { revision, prefix: "b", stack: BENCH_STACK });

async function time(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

type Row = S3Row;
type Op = "full save" | "restore" | "save, nothing new" | "save, 5% new entries";

async function benchSize(
  size: keyof typeof SIZES,
  s3: (prefix: string) => Store,
): Promise<Record<string, Row>> {
  const src = generatedCache(size);
  fs.rmSync(path.join(src, ".complete"));
  const work = fs.mkdtempSync(path.join(DATA, `s3-${size}-`));
  const archive = path.join(work, "cache.tar.zst");
  const empty = (): Row => ({
    "kcache-s3": { times: [], bytes: 0 },
    "kcache-local": { times: [], bytes: 0 },
    "tar+zstd": { times: [], bytes: 0 },
  });
  const rows: Record<Op, Row> = {
    "full save": empty(),
    restore: empty(),
    "save, nothing new": empty(),
    "save, 5% new entries": empty(),
  };
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const stores: [keyof Row, Store][] = [
        ["kcache-s3", s3(`${size}-${i}-${Date.now()}/`)],
        ["kcache-local", localStore(path.join(work, `local-${i}`))],
      ];
      for (const [name, store] of stores) {
        const r = rows;
        let saved = 0;
        r["full save"][name].times.push(
          await time(async () => {
            saved = (await save(await ctx(store, src, path.join(work, `${name}-s${i}`), "1".repeat(40))))
              .bytesUploaded;
          }),
        );
        r["full save"][name].bytes = saved;
        const dest = path.join(work, `${name}-d${i}`);
        let read = 0;
        r.restore[name].times.push(
          await time(async () => {
            read = (await restore(await ctx(store, dest, path.join(work, `${name}-r${i}`), "1".repeat(40))))
              .bytesDownloaded;
          }),
        );
        r.restore[name].bytes = read;
        let nc = -1;
        r["save, nothing new"][name].times.push(
          await time(async () => {
            nc = (await save(await ctx(store, dest, path.join(work, `${name}-r${i}`), "2".repeat(40))))
              .bytesUploaded;
          }),
        );
        r["save, nothing new"][name].bytes = nc;
        const extra = Math.ceil(SIZES[size].entries * 0.05);
        const g = rng(500 + i);
        for (let k = 0; k < extra; k++)
          writeKernelEntry(
            dest,
            tritonKeyName(`s3-${i}-${k}`),
            `n_${k}`,
            Math.floor(SIZES[size].bytes / SIZES[size].entries),
            g,
          );
        let delta = 0;
        r["save, 5% new entries"][name].times.push(
          await time(async () => {
            delta = (await save(await ctx(store, dest, path.join(work, `${name}-r${i}`), "3".repeat(40))))
              .bytesUploaded;
          }),
        );
        r["save, 5% new entries"][name].bytes = delta;
        rm(dest);
      }
      rows["full save"]["tar+zstd"].times.push(
        await time(() =>
          execSync(
            `tar -C ${JSON.stringify(src)} -cf - . | zstd -T0 -3 -q -o ${JSON.stringify(archive)} -f`,
            { shell: "/bin/bash" },
          ),
        ),
      );
      rows["full save"]["tar+zstd"].bytes = fs.statSync(archive).size;
      const dest = path.join(work, "tar-dest");
      fs.mkdirSync(dest, { recursive: true });
      rows.restore["tar+zstd"].times.push(
        await time(() =>
          execSync(`zstd -d -q -c ${JSON.stringify(archive)} | tar -C ${JSON.stringify(dest)} -xf -`, {
            shell: "/bin/bash",
          }),
        ),
      );
      rows.restore["tar+zstd"].bytes = fs.statSync(archive).size;
      rm(dest);
    }
    return rows;
  } finally {
    fs.writeFileSync(path.join(src, ".complete"), "");
    rm(work);
  }
}

async function main() {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  const server = await startS3rver("bench");
  const s3 = (prefix: string) =>
    s3Store({
      ...DEFAULT_S3,
      bucket: server.bucket,
      prefix,
      region: "us-east-1",
      endpoint: server.endpoint,
      forcePathStyle: true,
    });
  const raw: { label: string; op: string; row: S3Row }[] = [];
  try {
    for (const size of chosen) {
      const rows = await benchSize(size, s3);
      const label = `${size} (${SIZES[size].entries} entries)`;
      for (const [op, row] of Object.entries(rows)) raw.push({ label, op, row });
      console.error(`${size} done`);
    }
  } finally {
    await server.stop();
  }
  const section = [
    `Measured by \`npm run bench\` (${ROUNDS} rounds each, KCACHE_BENCH_SIZES=${chosen.join(",")}) on ${new Date().toISOString().slice(0, 10)}:`,
    `${machineLine()}; S3 is s3rver 3.7 (a Node implementation of the S3 API, objects on the same disk) on 127.0.0.1.`,
    "",
    ...s3Table(raw),
    "",
    '"S3 bytes moved" is what the operation uploaded (saves) or downloaded (restore): a save with nothing new',
    "transfers no pack and no manifest. tar+zstd has no delta: every save is the full archive again.",
  ].join("\n");
  writeBenchmarkSection(
    "s3",
    "Through the S3 store (loopback) vs the local store vs tar + zstd",
    section,
    raw,
  );
  console.log(section);
}

await main();
