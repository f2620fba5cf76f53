/**
 * `npm run bench` (lazy restores): restore: lazy against an eager restore of the same key and against
 * `tar | zstd` of the whole folder (what actions/cache restores), on two generated Triton-shaped keys:
 * FLA-shaped (223 entries, 110 MB, the job uses 43: its chunk_kda benchmark on the H200) and 4,000
 * kernels in 1 GB of which the job uses 5%. The key's last save recorded that use. Rounds interleave
 * eager, lazy and tar, each into a fresh folder; then a lookup of an entry left in the store is timed
 * through the Unix socket the hook asks (local store). Writes its table into BENCHMARKS.md and its raw
 * rows into bench/results/bench-lazy.json. Not a test: nothing asserts a time.
 *
 *   KCACHE_BENCH_LAZY=fla,gb (default)   KCACHE_BENCH_LAZY_ROUNDS=5
 */
import { execSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { JobLookups } from "../src/cache/lazy/job-lookups.js";
import { readState } from "../src/cache/local-state.js";
import { restore } from "../src/cache/restore/restore.js";
import { save } from "../src/cache/save/save.js";
import { decodeManifest, type Manifest } from "../src/manifest/manifest.js";
import { MANIFESTS } from "../src/store/layout.js";
import { localStore } from "../src/store/local.js";
import { generateTritonCache } from "../test/fixtures/triton-cache.js";
import { storeContext } from "../test/helpers/store-context.js";
import { BENCH_STACK, DATA, rm, writeBenchmarkSection } from "./generated-caches.js";
import { type LazyRow, lazyTable } from "./lazy-table.js";
import { machineLine, median, medianRatio } from "./measure.js";

const KEYS = {
  fla: {
    label: "FLA-shaped: 223 entries, 110 MB, the job uses 43",
    entries: 223,
    bytes: 110_000_000,
    used: 43,
  },
  gb: { label: "4,000 kernels, 1 GB, the job uses 5%", entries: 4000, bytes: 1_000_000_000, used: 200 },
};
type KeyName = keyof typeof KEYS;
const ROUNDS = Number(process.env.KCACHE_BENCH_LAZY_ROUNDS ?? 5);
const LOOKUPS = 100;

const ctx = (
  store: ReturnType<typeof localStore>,
  cache: string,
  state: string,
  revision: string,
  lazy: boolean,
) => storeContext(store, cache, state, { revision, prefix: "lazy", stack: BENCH_STACK, lazy });

async function timed<T>(fn: () => Promise<T>): Promise<{ s: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { s: (performance.now() - t0) / 1000, value };
}

/** The key's cache, generated once (a .complete marker says it is whole). */
function cacheOf(name: KeyName): string {
  const k = KEYS[name];
  const dir = path.join(DATA, `lazy-${name}-cache`);
  if (!fs.existsSync(path.join(dir, ".complete"))) {
    rm(dir);
    console.error(`generating the ${name} cache (${k.entries} entries)...`);
    generateTritonCache(dir, { entries: k.entries, totalBytes: k.bytes, seed: 41 });
    fs.writeFileSync(path.join(dir, ".complete"), "");
  }
  return dir;
}

/**
 * A store holding the key as a default branch leaves it: saved (revision a), then restored and saved
 * again (revision b) by a job that used `used` of its entries, chosen evenly across the key.
 */
async function seededStore(name: KeyName, work: string) {
  const src = cacheOf(name);
  fs.rmSync(path.join(src, ".complete"));
  const store = localStore(path.join(work, "store"));
  try {
    await save(await ctx(store, src, path.join(work, "s-a"), "a".repeat(40), true));
  } finally {
    fs.writeFileSync(path.join(src, ".complete"), "");
  }
  const job = path.join(work, "seed-job");
  const c = await ctx(store, job, path.join(work, "s-b"), "b".repeat(40), true);
  await restore(c);
  const names = fs
    .readdirSync(job)
    .filter((n) => !n.startsWith("."))
    .sort();
  const step = names.length / KEYS[name].used;
  const used = Array.from({ length: KEYS[name].used }, (_, i) => names[Math.floor(i * step)] as string);
  await save(c, { hook: { complete: true, dirs: used.map((n) => path.join(job, n)) } });
  rm(job);
  const m = newestManifest(path.join(work, "store"));
  return { store, used: new Set(used), manifest: m };
}

function newestManifest(store: string): Manifest {
  const files = fs.readdirSync(path.join(store, MANIFESTS), { recursive: true, withFileTypes: true });
  return files
    .filter((f) => f.isFile())
    .map((f) => decodeManifest(fs.readFileSync(path.join(f.parentPath, f.name)), f.name))
    .sort((a, b) => (a.generation ?? 0) - (b.generation ?? 0))
    .pop() as Manifest;
}

/** One lookup through the hook's socket, as the Python hook makes it: connect, ask, wait for the answer. */
function ask(socket: string, folder: string): Promise<{ placed: boolean }> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let text = "";
    c.on("connect", () => c.write(`${JSON.stringify({ folder, file: "k.json" })}\n`));
    c.on("data", (d) => {
      text += d.toString();
    });
    c.on("end", () => resolve(JSON.parse(text) as { placed: boolean }));
    c.on("error", reject);
  });
}

async function benchKey(name: KeyName): Promise<LazyRow> {
  fs.mkdirSync(DATA, { recursive: true });
  const work = fs.mkdtempSync(path.join(DATA, `lazy-${name}-`));
  try {
    const { store, used, manifest } = await seededStore(name, work);
    const usedFrames = manifest.entries
      .filter((e) => used.has(e.name))
      .reduce((n, e) => n + (e.frame?.[1] ?? 0), 0);
    const usedBytes = manifest.entries.filter((e) => used.has(e.name)).reduce((n, e) => n + e.size, 0);
    const archive = path.join(work, "cache.tar.zst");
    execSync(
      `tar -C ${JSON.stringify(cacheOf(name))} -cf - . | zstd -T0 -3 -q -o ${JSON.stringify(archive)} -f`,
      {
        shell: "/bin/bash",
      },
    );
    const eager: number[] = [];
    const lazy: number[] = [];
    const tar: number[] = [];
    const lookups: number[] = [];
    let eagerBytes = 0;
    let lazyBytes = 0;
    let deferred = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const order = i % 2 === 0 ? (["eager", "lazy", "tar"] as const) : (["tar", "lazy", "eager"] as const);
      for (const way of order) {
        const dest = path.join(work, `${way}-${i}`);
        if (way === "tar") {
          fs.mkdirSync(dest);
          tar.push(
            (
              await timed(async () =>
                execSync(`zstd -d -q -c ${JSON.stringify(archive)} | tar -C ${JSON.stringify(dest)} -xf -`, {
                  shell: "/bin/bash",
                }),
              )
            ).s,
          );
          continue;
        }
        const c = await ctx(store, dest, path.join(work, `st-${way}-${i}`), "c".repeat(40), way === "lazy");
        const r = await timed(() => restore(c, { servesLookups: way === "lazy" }));
        (way === "eager" ? eager : lazy).push(r.s);
        if (way === "eager") eagerBytes = r.value.bytesDownloaded;
        else {
          lazyBytes = r.value.bytesDownloaded;
          deferred = r.value.lazy?.deferred ?? 0;
          // Before this bench deleted anything: file creation is slow on this disk for minutes after.
          if (i === 0) lookups.push(...(await timeLookups(c, dest)));
        }
      }
      // Deleting outside the timed rounds: file creation is slow on this disk for a while after.
      for (const way of ["eager", "lazy", "tar"]) rm(path.join(work, `${way}-${i}`));
    }
    const row: LazyRow = {
      key: KEYS[name].label,
      entries: manifest.entries.length,
      used: used.size,
      deferred,
      usedBytes,
      usedFrameBytes: usedFrames,
      eager: { seconds: eager, bytesRead: eagerBytes },
      lazy: { seconds: lazy, bytesRead: lazyBytes },
      tar: { seconds: tar, bytesRead: fs.statSync(archive).size },
      lazyOverEager: medianRatio(lazy, eager),
      lazyOverTar: medianRatio(lazy, tar),
      lookupMs: { median: median(lookups) * 1000, p90: quantile(lookups, 0.9) * 1000, n: lookups.length },
    };
    console.error(JSON.stringify(row));
    return row;
  } finally {
    rm(work);
  }
}

/** Lookups of entries the lazy restore left in the store, one at a time, through the job's socket. */
async function timeLookups(c: Awaited<ReturnType<typeof ctx>>, dest: string): Promise<number[]> {
  const lookups = await JobLookups.start(c, readState(c.stateFile));
  if (!lookups) return [];
  const names = Object.keys(readState(c.stateFile)?.job?.deferred?.triton ?? {}).slice(0, LOOKUPS);
  const out: number[] = [];
  try {
    for (const n of names) {
      const folder = path.join(dest, n);
      fs.mkdirSync(folder, { recursive: true }); // as Triton's cache manager leaves it
      const t = await timed(() => ask(lookups.env().KCACHE_LAZY_SOCKET, folder));
      if (!t.value.placed) throw new Error(`lookup of ${n} was not served`);
      out.push(t.s);
    }
  } finally {
    await lookups.stop(0);
  }
  return out;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
}

async function main() {
  const chosen = (process.env.KCACHE_BENCH_LAZY ?? "fla,gb").split(",").filter((k) => k in KEYS) as KeyName[];
  const rows: LazyRow[] = [];
  for (const k of chosen) rows.push(await benchKey(k));
  const section = [
    `Measured by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: ${machineLine()}; local store, ${ROUNDS} rounds interleaved.`,
    "A key as a default branch leaves it: saved, then restored and saved again by a job that used some",
    "of its entries (the use its manifest records). Eager restores every entry; `restore: lazy`",
    "places the used ones by ranged reads of their frames and leaves the rest in the store; `tar + zstd`",
    "extracts an archive of the whole folder (what actions/cache restores). Times are medians; ratios",
    "medians of per-round ratios. A lookup is one entry left in the store, asked for through the",
    "Unix socket the hook uses, fetched alone, verified and placed (timed in the first round, before",
    "the bench deleted anything: file creation on this disk is slow for minutes after many deletions).",
    "",
    ...lazyTable(rows),
  ].join("\n");
  writeBenchmarkSection("lazy", "Lazy restores: what the job uses, against everything", section, rows);
  console.log(section);
}

await main();
