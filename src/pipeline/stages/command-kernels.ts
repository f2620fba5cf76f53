/** Kernels counted per command and across a run: the listener's counts, else the cache folder's. */
import type { FolderCount } from "../../telemetry/folder-count.js";
import type { GraphCacheCounts, KernelStats } from "../../telemetry/read.js";
import type { CommandKernels, CommandReport, RunReport, Stage } from "../run-report.js";

/** One command's kernels: the listener's counts where it ran, else the cache folder's. */
export function commandKernels(stats: KernelStats, folder: FolderCount | null): CommandKernels {
  const { plan: _plan, devices: _devices, hashes: _hashes, ...listener } = stats;
  const folderCompiled = folder ? folder.compiled : null;
  if (listener.status === "available" || listener.status === "no-triton")
    return { ...listener, source: listener.status === "available" ? "listener" : "none", folderCompiled };
  if (folder)
    return {
      ...listener,
      source: "cache-folder",
      loaded: null,
      compiled: folder.compiled,
      compileSeconds: null,
      compiledKernels: folder.kernels,
      folderCompiled,
    };
  return { ...listener, source: "none", loaded: null, compileSeconds: null, folderCompiled };
}

/**
 * Kernels across the run. A parallel group counted from the cache folder counts as one unit (its
 * commands' own figures are left out); everything else adds up command by command.
 */
export function totalKernels(commands: CommandReport[], stages: Stage[]): RunReport["kernels"] {
  const statuses = commands.map((c) => c.kernels.status);
  const folderGroups = new Set(stages.filter((s) => s.folderKernels).map((s) => s.name));
  const own = commands.filter((c) => !(c.group && folderGroups.has(c.group)));
  const groupCompiled = stages.reduce((n, s) => n + (s.folderKernels?.compiled ?? 0), 0);
  const byFolder = folderGroups.size > 0 || own.some((c) => c.kernels.source === "cache-folder");
  const unknown = own.some((c) => c.kernels.loaded === null) || folderGroups.size > 0;
  const sum = (f: (c: CommandReport) => number | null) => own.reduce((n, c) => n + (f(c) ?? 0), 0);
  return {
    status: statuses.includes("available")
      ? "available"
      : statuses.includes("unavailable")
        ? "unavailable"
        : "no-triton",
    source: byFolder ? "cache-folder" : statuses.includes("available") ? "listener" : "none",
    loaded: unknown ? null : sum((c) => c.kernels.loaded),
    compiled: sum((c) => c.kernels.compiled) + groupCompiled,
    compileSeconds: unknown ? null : sum((c) => c.kernels.compileSeconds),
    graphs: sumGraphs(commands),
  };
}

/** torch.compile's cache counters over every command (a parallel group's too: each command has its own). */
function sumGraphs(commands: CommandReport[]): GraphCacheCounts | null {
  const counted = commands.map((c) => c.kernels.graphs).filter((g): g is GraphCacheCounts => g !== null);
  if (counted.length === 0) return null;
  return {
    fxgraphHits: counted.reduce((n, g) => n + g.fxgraphHits, 0),
    fxgraphMisses: counted.reduce((n, g) => n + g.fxgraphMisses, 0),
    aotHits: counted.reduce((n, g) => n + g.aotHits, 0),
    aotMisses: counted.reduce((n, g) => n + g.aotMisses, 0),
  };
}
