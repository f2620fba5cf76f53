import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cpuPrewarmRows, cpuPrewarmTable } from "../../bench/cpu-prewarm-table.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const RAW = "bench/results/gpu-cpu-prewarm-2026-12-05.json";
const raw = () => JSON.parse(fs.readFileSync(path.join(ROOT, RAW), "utf8"));

describe("BENCHMARKS.md's GPU-free prewarm table is the raw run on the H200 (issue 51)", () => {
  it("the table is bench/results' raw run rendered, and README quotes its figures", () => {
    const doc = fs.readFileSync(path.join(ROOT, "BENCHMARKS.md"), "utf8");
    expect(doc).toContain(cpuPrewarmTable(raw()).join("\n"));
    const { without, after, cpu } = cpuPrewarmRows(raw());
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    expect(readme).toContain(`${without.compiled} kernels`);
    expect(readme).toContain(`${after.compiled} with a CPU prewarm`);
    expect(readme).toContain(`${cpu.wall.toFixed(1)} s`);
  });

  it("without the prewarm the pull request's GPU job compiles, after it none; the prewarm touched no GPU and computed the GPU job's keys", () => {
    const { base, without, cpu, after } = cpuPrewarmRows(raw());
    expect(base.compiled).toBeGreaterThan(0);
    expect(without.compiled).toBeGreaterThan(0);
    expect(after.compiled).toBe(0);
    for (const r of [base, without, after]) expect(r.exit).toBe(0);
    expect(cpu.exit).toBe(0);
    expect(cpu.report.touchedCuda).toBe(false);
    expect(cpu.gpuProcessesSeen).toEqual([]);
    expect(cpu.report.counts.compiled).toBeGreaterThan(0);
    expect(cpu.report.counts.failed + cpu.report.counts.missing).toBe(0);
    expect(cpu.report.sameKey.other).toBe(0);
    expect(after.cpuPrewarm?.stillCompiled).toBe(0);
    expect(after.cpuPrewarm?.loadedAhead).toBeGreaterThan(0);
  });
});
