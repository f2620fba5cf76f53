/**
 * Writes the GPU machine's speed table into BENCHMARKS.md from the raw file
 * bench/gpu/speed-on-device.sh brought back (copied into bench/results/):
 *
 *   node build/bench/write-gpu-speed.js bench/results/gpu-speed-<date>.json
 */
import fs from "node:fs";
import path from "node:path";
import { writeBenchmarkSection } from "./generated-caches.js";
import { type SpeedRaw, speedTable } from "./tables.js";

const file = process.argv[2];
if (!file) throw new Error("usage: node build/bench/write-gpu-speed.js bench/results/gpu-speed-<date>.json");
const raw = JSON.parse(fs.readFileSync(file, "utf8")) as SpeedRaw;
writeBenchmarkSection(
  "speed-gpu",
  "Restore and save end to end on the GPU machine (16 cores)",
  [
    ...speedTable(raw),
    "",
    `Raw: ${path.relative(path.resolve(import.meta.dirname, "../.."), path.resolve(file))}.`,
  ].join("\n"),
);
