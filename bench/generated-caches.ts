import fs from "node:fs";
import path from "node:path";
import { fingerprintFrom } from "../src/stack/fingerprint.js";
import { generateInductorCache } from "../test/fixtures/inductor-cache.js";
import { generateTritonCache } from "../test/fixtures/triton-cache.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");
/** Generated caches are kept here between runs (git-ignored): generating 1 GB takes a while. */
export const DATA = path.join(ROOT, "bench", ".data");
export const SIZES = {
  small: { entries: 220, bytes: 110_000_000 },
  large: { entries: 2000, bytes: 1_000_000_000 },
};
export type Size = keyof typeof SIZES;
/** The sizes KCACHE_BENCH_SIZES asks for (default both). */
export const chosenSizes = (): Size[] =>
  (process.env.KCACHE_BENCH_SIZES ?? "small,large").split(",").filter((s) => s in SIZES) as Size[];
/** Whether KCACHE_BENCH_SIZES asks for the Inductor row (default yes). */
export const inductorChosen = (): boolean =>
  (process.env.KCACHE_BENCH_SIZES ?? "small,large,inductor").split(",").includes("inductor");

/**
 * torch.compile's cache for the Inductor row: $KCACHE_BENCH_INDUCTOR_CACHE where a real one was made
 * (bench/gpu/speed-on-device.sh runs examples/torch-compile/model.py cold on the GPU), else one
 * generated in its shape (test/fixtures/inductor-cache.ts: Triton kernel folders, generated modules,
 * autotune results and two pickles naming the folder), as many files as the real one had (797), and
 * none of the debris a save leaves out (locks, temp files).
 */
export function inductorCache(): { dir: string; source: string } {
  const real = process.env.KCACHE_BENCH_INDUCTOR_CACHE;
  if (real) return { dir: real, source: "torch.compile's own (examples/torch-compile/model.py, cold)" };
  const dir = path.join(DATA, "inductor-cache");
  if (!fs.existsSync(path.join(dir, ".complete"))) {
    rm(dir);
    console.error("generating the Inductor-shaped cache...");
    const made = generateInductorCache(dir, { kernels: 98 });
    for (const f of made.debris) fs.rmSync(path.join(dir, f));
    fs.writeFileSync(path.join(dir, ".complete"), "");
  }
  return { dir, source: "generated in its shape (test/fixtures/inductor-cache.ts)" };
}
/** A fixed stack, so benchmarks do not probe this machine's Python. */
export const BENCH_STACK = fingerprintFrom(
  null,
  { models: ["bench"], driver: null, vendor: null, cann: null },
  {},
);

export const rm = (p: string) => fs.rmSync(p, { recursive: true, force: true });

/** The generated Triton-shaped cache of one size, made once and reused (a .complete marker says it is whole). */
export function generatedCache(size: Size): string {
  const dir = path.join(DATA, `${size}-cache`);
  if (!fs.existsSync(path.join(dir, ".complete"))) {
    rm(dir);
    console.error(`generating the ${size} cache (${SIZES[size].entries} entries)...`);
    generateTritonCache(dir, { entries: SIZES[size].entries, totalBytes: SIZES[size].bytes, seed: 42 });
    fs.writeFileSync(path.join(dir, ".complete"), "");
  }
  return dir;
}

/** Seconds, or milliseconds below 0.1 s. */
export const fmtSeconds = (s: number) => (s < 0.1 ? `${(s * 1000).toFixed(1)} ms` : `${s.toFixed(2)} s`);
/** kB below 1 MB, else MB. */
export const fmtMB = (b: number) => (b < 1e6 ? `${(b / 1e3).toFixed(1)} kB` : `${(b / 1e6).toFixed(1)} MB`);

/** Replaces the text between `<!-- bench:<name>:start -->` and its end marker in BENCHMARKS.md. */
export function writeBenchmarkSection(name: string, heading: string, body: string, raw?: unknown): void {
  if (raw !== undefined) {
    // The raw rows the table was rendered from: test/docs/benchmarks.test.ts renders them again.
    const results = path.join(ROOT, "bench", "results");
    fs.mkdirSync(results, { recursive: true });
    fs.writeFileSync(
      path.join(results, `bench-${name}.json`),
      `${JSON.stringify({ name, rows: raw }, null, 1)}\n`,
    );
  }
  const file = path.join(ROOT, "BENCHMARKS.md");
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  let text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "# Benchmarks\n";
  if (!text.includes(start)) text = `${text.trimEnd()}\n\n## ${heading}\n\n${start}\n${end}\n`;
  const section = `${start}\n${body}\n${end}`;
  fs.writeFileSync(
    file,
    text.replace(new RegExp(`${start}[\\s\\S]*${end}`), () => section),
  );
}
