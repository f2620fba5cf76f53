import { boundedText } from "../bounded-file.js";

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
  /** Each file those writes made, with the sha256 of the bytes written and when (each version once, its latest time). */
  wroteFiles: WrittenFileRecord[];
  /** Every process that imported Triton had the wrapper in, and one did: `usedFolders` misses no lookup. */
  usageComplete: boolean;
  /** torch.compile's own cache counters, summed over processes; null when none compiled a graph. */
  graphs: GraphCacheCounts | null;
  /** Autotune results looked up: the kernel, whether one was there (a winner given) or it was tuned now, and its entry folder. */
  autotune: { kernel: string; hit: boolean; folder: string }[];
  /** The module files each autotuned kernel is defined in (its salt's sources). */
  autotuneModules: Record<string, string[]>;
  /** The hook's compile plan lines, as written (cache/plan/plan.ts checks them), at most MAX_PLAN_LINES. */
  plan: unknown[];
  /** The device facts the hook's processes wrote (cache/plan/plan.ts checks them), at most a few. */
  devices: unknown[];
  /** Cache keys of the kernels loaded, and of those compiled with their names (the hook's kernel lines that name one), each once. */
  hashes: { loaded: string[]; compiled: [string, string][] };
}

/** The most compile plan lines kept from one telemetry file (cache/plan/plan.ts's MAX_PLAN_ENTRIES). */
export const MAX_PLAN_LINES = 50_000;

/** A file a job's process wrote through Triton's cache manager, as the hook recorded it. */
export interface WrittenFileRecord {
  /** The entry folder (absolute, as the process saw it). */
  folder: string;
  /** The file's name in it. */
  file: string;
  /** sha256 of the bytes written, hex. */
  sha256: string;
  /** When it was written (seconds since the epoch, the process's clock); null where the line did not say. */
  t: number | null;
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
  sha256?: string;
  t?: number;
  usage?: boolean;
  kernel?: string;
  cache_hit?: boolean;
  autotune?: string;
  hit?: boolean;
  hash?: string | null;
  plan?: unknown;
  device?: unknown;
  folder?: string;
  autotuneModule?: string;
  file?: string;
  compile_s?: number | null;
  event?: string;
  triton?: string | null;
  listener?: boolean;
}

/**
 * The most of a telemetry file read: a job's processes write it, so its size is theirs to choose. Ten
 * thousand kernels compiled write about 10 MB.
 */
export const MAX_TELEMETRY_BYTES = 256 * 1024 * 1024;

/**
 * Reads a telemetry file; a missing file means no Python process imported Triton. The job's processes
 * write it, so it is read as a path kcache does not own: only a regular file (a FIFO or a link to a
 * device is never opened for a blocking read), at most MAX_TELEMETRY_BYTES; anything else reads as
 * no telemetry at all. `kernelsSince` (seconds since the epoch): kernel lines written before it are not
 * counted (a job's file may hold its earlier steps' lines); lines without a time are.
 */
export function readTelemetry(file: string, kernelsSince: number | null = null): KernelStats {
  const stats: KernelStats = {
    status: "no-triton",
    loaded: 0,
    compiled: 0,
    compileSeconds: 0,
    compiledKernels: [],
    tritonVersions: [],
    usedFolders: [],
    wroteFolders: [],
    wroteFiles: [],
    usageComplete: false,
    graphs: null,
    autotune: [],
    autotuneModules: {},
    plan: [],
    devices: [],
    hashes: { loaded: [], compiled: [] },
  };
  const text = boundedText(file, MAX_TELEMETRY_BYTES);
  if (text === null) return stats;
  const names = new Map<string, number>();
  let sawListener = false;
  let sawTriton = false;
  let exits = 0;
  let exitsWithUsage = 0;
  const used = new Set<string>();
  const wrote = new Set<string>();
  const files = new Map<string, WrittenFileRecord>();
  const hashes = { loaded: new Set<string>(), compiled: new Map<string, string>() };
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
      if (typeof rec.wrote === "string") noteFile(files, rec);
      continue;
    }
    if (noteAutotune(stats, rec)) continue;
    if (notePlan(stats, rec)) continue;
    if (rec.event === "exit") {
      sawTriton = true;
      exits++;
      if (rec.usage) exitsWithUsage++;
      if (rec.torch) noteGraphs(stats, rec.torch);
      if (rec.listener) sawListener = true;
      if (rec.triton && !stats.tritonVersions.includes(rec.triton)) stats.tritonVersions.push(rec.triton);
      continue;
    }
    sawListener = true;
    sawTriton = true;
    if (kernelsSince !== null && typeof rec.t === "number" && rec.t < kernelsSince) continue;
    noteHash(hashes, rec);
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
  stats.wroteFiles = [...files.values()];
  stats.hashes = { loaded: [...hashes.loaded], compiled: [...hashes.compiled] };
  stats.usageComplete = exits > 0 && exitsWithUsage === exits;
  stats.compiledKernels = [...names]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 20)
    .map(([n]) => n);
  return stats;
}

/** A compile plan or device line ({"plan"}, {"device"}), kept as written, bounded; false for other lines. */
function notePlan(stats: KernelStats, rec: KernelLine): boolean {
  if (rec.plan === undefined && rec.device === undefined) return false;
  if (rec.plan && stats.plan.length < MAX_PLAN_LINES) stats.plan.push(rec.plan);
  if (rec.device && stats.devices.length < 16) stats.devices.push(rec.device);
  return true;
}

/** A kernel line's cache key, kept as loaded or compiled (with its name), bounded. */
function noteHash(hashes: { loaded: Set<string>; compiled: Map<string, string> }, rec: KernelLine): void {
  const h = rec.hash;
  if (typeof h !== "string" || !/^[0-9a-f]{64}$/.test(h)) return;
  if (hashes.loaded.size + hashes.compiled.size >= MAX_PLAN_LINES) return;
  if (rec.cache_hit) hashes.loaded.add(h);
  else hashes.compiled.set(h, String(rec.kernel ?? "?").slice(0, 256));
}

/** torch.compile's counters of one process, added to the run's. */
function noteGraphs(stats: KernelStats, torch: NonNullable<KernelLine["torch"]>): void {
  stats.graphs ??= { fxgraphHits: 0, fxgraphMisses: 0, aotHits: 0, aotMisses: 0 };
  const g = stats.graphs;
  g.fxgraphHits += torch.fxgraph_hit ?? 0;
  g.fxgraphMisses += torch.fxgraph_miss ?? 0;
  g.aotHits += torch.aot_hit ?? 0;
  g.aotMisses += torch.aot_miss ?? 0;
}

/** A written file's line ({"wrote", "file", "sha256", "t"}) kept once per version, at its latest time. */
function noteFile(files: Map<string, WrittenFileRecord>, rec: KernelLine): void {
  const { wrote: folder, file, sha256 } = rec;
  if (typeof folder !== "string" || typeof file !== "string" || typeof sha256 !== "string") return;
  if (!/^[0-9a-f]{64}$/.test(sha256)) return;
  const t = typeof rec.t === "number" && Number.isFinite(rec.t) ? rec.t : null;
  const id = `${folder}\0${file}\0${sha256}`;
  const had = files.get(id);
  if (!had || (t !== null && (had.t === null || t > had.t))) files.set(id, { folder, file, sha256, t });
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
