/**
 * BENCHMARKS.md's table of the GPU-free prewarm on FLA's chunk_kda smoke benchmark
 * (bench/gpu/cpu-prewarm-on-device.sh), from its raw file (bench/results/gpu-cpu-prewarm-*.json).
 */

/** A GPU job's row (`kcache run`), as the device script writes it. */
interface JobRow {
  label: string;
  wall: number;
  exit: number;
  command?: number;
  compiled?: number | null;
  loaded?: number | null;
  cpuPrewarm?: { compiledAhead: number; loadedAhead: number; stillCompiled: number } | null;
}

/** The CPU prewarm's row: its wall time, exit, and `kcache prewarm --cpu --json`'s report. */
interface CpuRow {
  label: string;
  wall: number;
  exit: number;
  report: {
    plan: number;
    counts: { unchanged: number; compiled: number; cached: number; missing: number; failed: number };
    sameKey: { same: number; other: number };
    touchedCuda: boolean;
    cuda?: string[];
    seconds: { restore: number; compile: number; save: number; total: number };
  };
  gpuProcessesSeen: string[];
}

export interface CpuPrewarmRun {
  rows: (JobRow | CpuRow)[];
}

/** The four rows by their role: the base job, the pull request's GPU job without and after, the prewarm. */
export function cpuPrewarmRows(run: CpuPrewarmRun): {
  base: JobRow;
  without: JobRow;
  cpu: CpuRow;
  after: JobRow;
} {
  const find = (prefix: string) => {
    const r = run.rows.find((x) => x.label.startsWith(prefix));
    if (!r) throw new Error(`no row labelled ${prefix}…`);
    return r;
  };
  return {
    base: find("base") as JobRow,
    without: find("pr-gpu (no CPU prewarm)") as JobRow,
    cpu: find("cpu prewarm") as CpuRow,
    after: find("pr-gpu after CPU prewarm") as JobRow,
  };
}

/** One row per job: wall seconds, the benchmark command's seconds, kernels compiled and loaded. */
export function cpuPrewarmTable(run: CpuPrewarmRun): string[] {
  const { base, without, cpu, after } = cpuPrewarmRows(run);
  const s = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(1));
  const c = cpu.report.counts;
  const ahead = after.cpuPrewarm;
  return [
    "| job | machine | wall s | benchmark s | kernels compiled | kernels loaded |",
    "|---|---|---:|---:|---:|---:|",
    `| main's GPU job, cold (\`kcache run\`: saves the key and its plan) | H200 | ${s(base.wall)} | ${s(base.command)} | ${base.compiled} | ${base.loaded} |`,
    `| the pull request's GPU job, no CPU prewarm | H200 | ${s(without.wall)} | ${s(without.command)} | ${without.compiled} | ${without.loaded} |`,
    `| \`kcache prewarm --cpu\` (CUDA_VISIBLE_DEVICES empty) | same host, no GPU visible | ${s(cpu.wall)} | - | ${c.compiled} of ${cpu.report.plan} in the plan (${c.unchanged} unchanged, ${cpu.report.sameKey.same} of them at the GPU job's very key) | - |`,
    `| the pull request's GPU job after it | H200 | ${s(after.wall)} | ${s(after.command)} | ${after.compiled} | ${after.loaded}${ahead ? ` (${ahead.loadedAhead} of the ${ahead.compiledAhead} compiled ahead)` : ""} |`,
  ];
}
