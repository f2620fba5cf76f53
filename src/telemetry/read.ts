import fs from "node:fs";

/** Kernel loads of one command, from the telemetry its Python processes wrote. */
export interface KernelStats {
  /** "available": the listener ran; "unavailable": Triton was imported but has no listener (< 3.4); "no-triton": no process imported Triton. */
  status: "available" | "unavailable" | "no-triton";
  loaded: number;
  compiled: number;
  compileSeconds: number;
  /** Names of compiled kernels, most frequent first (at most 20). */
  compiledKernels: string[];
  tritonVersions: string[];
  /** Cache entry folders Triton's cache manager found files in (the hook's wrapper), each once. */
  usedFolders: string[];
  /** Cache entry folders the job's processes wrote through Triton's cache manager (put, put_group), each once. */
  wroteFolders: string[];
  /** Every process that imported Triton had the wrapper in, and one did: `usedFolders` misses no lookup. */
  usageComplete: boolean;
  /** torch.compile's own cache counters, summed over processes; null when none compiled a graph. */
  graphs: GraphCacheCounts | null;
  /** Autotune results looked up: the kernel, whether one was there (a winner given) or it was tuned now, and its entry folder. */
  autotune: { kernel: string; hit: boolean; folder: string }[];
  /** The module files each autotuned kernel is defined in (its salt's sources). */
  autotuneModules: Record<string, string[]>;
}

/** torch.compile's FX graph cache and AOTAutograd cache, as torch._dynamo.utils.counters counts them. */
export interface GraphCacheCounts {
  fxgraphHits: number;
  fxgraphMisses: number;
  aotHits: number;
  aotMisses: number;
}

interface KernelLine {
  torch?: { fxgraph_hit?: number; fxgraph_miss?: number; aot_hit?: number; aot_miss?: number } | null;
  used?: string;
  wrote?: string;
  usage?: boolean;
  kernel?: string;
  cache_hit?: boolean;
  autotune?: string;
  hit?: boolean;
  folder?: string;
  autotuneModule?: string;
  file?: string;
  compile_s?: number | null;
  event?: string;
  triton?: string | null;
  listener?: boolean;
}

/** Reads a telemetry file; a missing file means no Python process imported Triton. */
export function readTelemetry(file: string): KernelStats {
  const stats: KernelStats = {
    status: "no-triton",
    loaded: 0,
    compiled: 0,
    compileSeconds: 0,
    compiledKernels: [],
    tritonVersions: [],
    usedFolders: [],
    wroteFolders: [],
    usageComplete: false,
    graphs: null,
    autotune: [],
    autotuneModules: {},
  };
  let text = "";
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return stats;
  }
  const names = new Map<string, number>();
  let sawListener = false;
  let sawTriton = false;
  let exits = 0;
  let exitsWithUsage = 0;
  const used = new Set<string>();
  const wrote = new Set<string>();
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let rec: KernelLine;
    try {
      rec = JSON.parse(line) as KernelLine;
    } catch {
      continue; // a process killed mid-line
    }
    if (typeof rec.used === "string" || typeof rec.wrote === "string") {
      (rec.used ? used : wrote).add((rec.used ?? rec.wrote) as string);
      continue;
    }
    if (noteAutotune(stats, rec)) continue;
    if (rec.event === "exit") {
      sawTriton = true;
      exits++;
      if (rec.usage) exitsWithUsage++;
      if (rec.torch) {
        stats.graphs ??= { fxgraphHits: 0, fxgraphMisses: 0, aotHits: 0, aotMisses: 0 };
        const g = stats.graphs;
        g.fxgraphHits += rec.torch.fxgraph_hit ?? 0;
        g.fxgraphMisses += rec.torch.fxgraph_miss ?? 0;
        g.aotHits += rec.torch.aot_hit ?? 0;
        g.aotMisses += rec.torch.aot_miss ?? 0;
      }
      if (rec.listener) sawListener = true;
      if (rec.triton && !stats.tritonVersions.includes(rec.triton)) stats.tritonVersions.push(rec.triton);
      continue;
    }
    sawListener = true;
    sawTriton = true;
    if (rec.cache_hit) stats.loaded++;
    else {
      stats.compiled++;
      stats.compileSeconds += rec.compile_s ?? 0;
      const n = rec.kernel ?? "?";
      names.set(n, (names.get(n) ?? 0) + 1);
    }
  }
  stats.status = sawListener ? "available" : sawTriton ? "unavailable" : "no-triton";
  stats.usedFolders = [...used];
  stats.wroteFolders = [...wrote];
  stats.usageComplete = exits > 0 && exitsWithUsage === exits;
  stats.compiledKernels = [...names]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 20)
    .map(([n]) => n);
  return stats;
}

/** An autotune line (a lookup, or a kernel's module) added to `stats`; false for other lines. */
function noteAutotune(stats: KernelStats, rec: KernelLine): boolean {
  if (typeof rec.autotune === "string" && typeof rec.folder === "string") {
    const seen = stats.autotune.some((a) => a.folder === rec.folder && a.hit === Boolean(rec.hit));
    if (!seen) stats.autotune.push({ kernel: rec.autotune, hit: Boolean(rec.hit), folder: rec.folder });
    return true;
  }
  if (typeof rec.autotuneModule === "string" && typeof rec.file === "string") {
    const files = stats.autotuneModules[rec.autotuneModule] ?? [];
    if (!files.includes(rec.file)) files.push(rec.file);
    stats.autotuneModules[rec.autotuneModule] = files;
    return true;
  }
  return false;
}
