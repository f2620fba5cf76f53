/**
 * The benchmark tables of BENCHMARKS.md, rendered from the raw rows the benchmarks keep in
 * bench/results/ (bench-store.json, bench-s3.json): the same code renders them when measuring and when
 * a test checks that BENCHMARKS.md still says what its raw files say.
 */
import { fmtMB, fmtSeconds } from "./generated-caches.js";
import { median } from "./measure.js";

/** One operation on one cache size, kcache and tar+zstd back to back in each round. */
export interface StoreRow {
  size: string;
  op: string;
  kcache: number[];
  tar: number[];
  kcacheBytes: number;
  tarBytes: number | null;
}

/** The local store vs tar + zstd table. */
export function storeTable(rows: StoreRow[]): string[] {
  return [
    "| cache | operation | kcache median (min–max) | tar+zstd median | kcache / tar+zstd (median of rounds) | kcache bytes written/read | tar+zstd bytes |",
    "|---|---|---|---|---|---|---|",
    ...rows.map((r) => {
      const k = median(r.kcache);
      const t = median(r.tar);
      // The median of per-round ratios: each round ran both back to back.
      const ratio = median(r.kcache.map((k, i) => k / (r.tar[i] as number)));
      return `| ${r.size} | ${r.op} | ${fmtSeconds(k)} (${fmtSeconds(Math.min(...r.kcache))}–${fmtSeconds(Math.max(...r.kcache))}) | ${fmtSeconds(t)} | ${ratio.toFixed(2)}x | ${fmtMB(r.kcacheBytes)} | ${r.tarBytes === null ? "-" : fmtMB(r.tarBytes)} |`;
    }),
  ];
}

export interface Cell {
  times: number[];
  bytes: number;
}
export type S3Row = Record<"kcache-s3" | "kcache-local" | "tar+zstd", Cell>;

/** The S3 store vs local store vs tar + zstd table: `label` and `op` per row. */
export function s3Table(rows: { label: string; op: string; row: S3Row }[]): string[] {
  return [
    "| cache | operation | kcache, S3 store (median) | kcache, local store (median) | tar+zstd, file (median) | S3 bytes moved | tar+zstd bytes |",
    "|---|---|---|---|---|---|---|",
    ...rows.map(({ label, op, row: r }) => {
      const tar = r["tar+zstd"].times.length ? fmtSeconds(median(r["tar+zstd"].times)) : "-";
      return `| ${label} | ${op} | ${fmtSeconds(median(r["kcache-s3"].times))} | ${fmtSeconds(median(r["kcache-local"].times))} | ${tar} | ${fmtMB(r["kcache-s3"].bytes)} | ${r["tar+zstd"].times.length ? fmtMB(r["tar+zstd"].bytes) : "-"} |`;
    }),
  ];
}

/** One process's wall seconds and peak RSS bytes. */
export interface Run {
  s: number;
  rss: number;
}

/** bench/run-speed-bench.ts's raw results. */
export interface SpeedRaw {
  machine: string;
  command: string;
  rounds: number;
  sizes: {
    size: string;
    entries: number;
    bytes: number;
    save: { kcache: Run[]; tar: Run[] };
    restore: { kcache: Run[]; tar: Run[] };
    floors: { zstdToNull: number[]; tarExtract: number[]; sha256: number[] };
    fixed: { node: number[]; key: number[]; miss: number[]; nothingNew: number[] } | null;
  }[];
}

const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;

/** Issue 15's goal table: CLI end to end against tar + zstd, with peak RSS, fixed costs and floors. */
export function speedTable(raw: SpeedRaw): string[] {
  const lines = [
    `Machine: ${raw.machine}. Command: \`${raw.command}\`, ${raw.rounds} interleaved rounds per row.`,
    "",
    "| cache | operation | kcache median (min–max) | tar+zstd median | kcache / tar+zstd (median of rounds) | goal | kcache peak RSS (median) | tar+zstd peak RSS |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const z of raw.sizes) {
    const label = `${z.size} (${z.entries} entries, ${mb(z.bytes)})`;
    for (const [op, pair, goal, ref] of [
      ["restore", z.restore, "≤ 1.0x", "zstd -d \\| tar -x"],
      ["full save", z.save, "≤ 1.2x", "tar -c \\| zstd -T0 -3"],
    ] as const) {
      const k = pair.kcache.map((r) => r.s);
      const t = pair.tar.map((r) => r.s);
      const ratio = median(k.map((v, i) => v / (t[i] as number)));
      lines.push(
        `| ${label} | ${op} (vs ${ref}) | ${fmtSeconds(median(k))} (${fmtSeconds(Math.min(...k))}–${fmtSeconds(Math.max(...k))}) | ${fmtSeconds(median(t))} | ${ratio.toFixed(2)}x | ${goal} | ${mb(median(pair.kcache.map((r) => r.rss)))} | ${mb(median(pair.tar.map((r) => r.rss)))} |`,
      );
    }
  }
  lines.push(
    "",
    "Fixed cost of a command (110 MB cache; goal ≤ 150 ms), median of the rounds beside `node -e 0`:",
    "",
    "| command | median (min–max) | node -e 0 |",
    "|---|---|---|",
  );
  for (const z of raw.sizes) {
    if (!z.fixed) continue;
    const f = z.fixed;
    for (const [name, xs] of [
      ["kcache key", f.key],
      ["kcache restore, a miss", f.miss],
      ["kcache save, nothing new", f.nothingNew],
    ] as const) {
      lines.push(
        `| ${name} | ${fmtSeconds(median(xs))} (${fmtSeconds(Math.min(...xs))}–${fmtSeconds(Math.max(...xs))}) | ${fmtSeconds(median(f.node))} |`,
      );
    }
  }
  lines.push(
    "",
    "Floors on this machine (median): what decompression, extraction and hashing cost alone.",
    "",
    "| cache | zstd -d to /dev/null | tar -x of the uncompressed tar | sha256 of the tar bytes |",
    "|---|---|---|---|",
    ...raw.sizes.map(
      (z) =>
        `| ${z.size} | ${fmtSeconds(median(z.floors.zstdToNull))} | ${fmtSeconds(median(z.floors.tarExtract))} | ${fmtSeconds(median(z.floors.sha256))} |`,
    ),
  );
  return lines;
}

/** One history of the working-set benchmark: a churn rate, with eviction by use at its defaults or off. */
export interface WorkingSetRow {
  label: "defaults" | "off";
  churn: number;
  commits: number;
  kernels: number;
  restoredOverLive: number;
  restoredEntries: number;
  newestKeyOverOne: number;
  storeAfterPruneOverOne: number;
  folderArchiveOverOne: number;
  recompiled: number;
  evicted: number;
  consolidations: number;
  source: string;
}

/** The working-set table: restored bytes and store bytes at the last commit, per churn rate. */
export function workingSetTable(rows: WorkingSetRow[]): string[] {
  const x = (v: number) => `${v.toFixed(2)}x`;
  return [
    "| churn per commit | eviction | restored / live (last commit) | newest key / one working set | store after prune / one working set | actions/cache: its archive of the folder / one working set | recompiled | entries evicted |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${Math.round(r.churn * 100)}% | ${r.label === "defaults" ? "defaults (5 saves, 30 days)" : "off"} | ${x(r.restoredOverLive)} | ${x(r.newestKeyOverOne)} | ${x(r.storeAfterPruneOverOne)} | ${r.label === "off" ? x(r.folderArchiveOverOne) : "-"} | ${r.recompiled} | ${r.evicted} |`,
    ),
  ];
}

/** One revision of bench/gpu/working-set-on-device.sh (bench/results/gpu-working-set.json). */
export interface GpuWorkingSetRow {
  mode: "run" | "plain";
  revision: number;
  restoredEntries: number;
  compiled: number;
  loaded: number | null;
  saveOutcome: string;
  saveUsage: {
    source: string;
    live: { entries: number };
    unused: { entries: number };
    evicted: { entries: number };
  };
}

/** The GPU working-set table: per revision, what was restored, compiled, loaded and kept. */
export function gpuWorkingSetTable(rows: GpuWorkingSetRow[]): string[] {
  return [
    "| revision | how use was learnt | restored entries | compiled | kernels loaded (listener) | save | entries used / unused / evicted |",
    "|---:|---|---:|---:|---:|---|---|",
    ...rows.map((r) => {
      const u = r.saveUsage;
      return `| ${r.revision} | ${r.mode === "run" ? "kcache run: hook and access times" : "restore, python, save: access times"} | ${r.restoredEntries} | ${r.compiled} | ${r.loaded ?? "-"} | ${r.saveOutcome} | ${u.live.entries} / ${u.unused.entries} / ${u.evicted.entries} |`;
    }),
  ];
}

/** One run of bench/gpu/inductor-on-device.sh (bench/results/gpu-inductor.json's rows). */
export interface GpuInductorRow {
  label: string;
  round: number;
  first_call_s: number;
  restore_s: number | null;
  mega_load_s: number | null;
  fxgraph: Record<string, number>;
  aotautograd: Record<string, number>;
  triton_compiled: number;
  files_inside: number;
  files_outside: number;
}

/** The runs in table order, with what each is, and the run each is compared with round by round. */
export const INDUCTOR_RUNS: { label: string; what: string; versus: string | null }[] = [
  { label: "cold", what: "cold: empty cache at A", versus: null },
  {
    label: "warm-same-path",
    what: "warm at A itself (the limit), from what the cold run left",
    versus: null,
  },
  {
    label: "kcache",
    what: "kcache: A deleted, restored at B, from the same content",
    versus: "warm-same-path",
  },
  { label: "mega-cache", what: "Mega-Cache: load_cache_artifacts into an empty D", versus: "kcache" },
  {
    label: "plain-copy",
    what: "a plain copy of the cold cache at E, A gone (actions/cache)",
    versus: "kcache",
  },
  { label: "warm-same-path-2", what: "a second warm run at A", versus: null },
  { label: "kcache-second", what: "a second kcache run: B's save restored at C", versus: "warm-same-path-2" },
];

const spread = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${median(xs).toFixed(2)} s (${(s[0] as number).toFixed(2)}–${(s[s.length - 1] as number).toFixed(2)})`;
};

/** Median over rounds of `label`'s first call divided by `versus`'s in the same round. */
export function inductorRatio(rows: GpuInductorRow[], label: string, versus: string): number {
  const of = (l: string) => new Map(rows.filter((r) => r.label === l).map((r) => [r.round, r.first_call_s]));
  const a = of(label);
  const b = of(versus);
  return median([...a].map(([round, s]) => s / (b.get(round) as number)));
}

/** The GPU Inductor table: first call, the per-round ratio, compiles and files written, per kind of run. */
export function gpuInductorTable(rows: GpuInductorRow[]): string[] {
  return [
    "| run | first call, median (min–max) | / what it is compared with (median of rounds) | Triton kernels compiled per round | FX graph cache | files written in the cache / outside it |",
    "|---|---|---|---|---|---|",
    ...INDUCTOR_RUNS.map(({ label, what, versus }) => {
      const rs = rows.filter((r) => r.label === label).sort((a, b) => a.round - b.round);
      const fx = rs.every((r) => (r.fxgraph.fxgraph_cache_hit ?? 0) > 0)
        ? "hit"
        : rs.every((r) => (r.fxgraph.fxgraph_cache_miss ?? 0) > 0)
          ? "miss"
          : "mixed";
      const ratio = versus ? `${inductorRatio(rows, label, versus).toFixed(2)}x ${versus}` : "-";
      return `| ${what} | ${spread(rs.map((r) => r.first_call_s))} | ${ratio} | ${rs.map((r) => r.triton_compiled).join(", ")} | ${fx} | ${rs.map((r) => r.files_inside).join(", ")} / ${rs.map((r) => r.files_outside).join(", ")} |`;
    }),
  ];
}

/** bench/results/gpu-persistent.json: bench/gpu/persistent-on-device.sh's rows. */
export interface GpuPersistentRaw {
  kernels: number;
  new: number;
  miss: {
    restore: { entriesBefore: number; entriesLocal: number; entriesRestored: number };
    job: { compiled: number; loaded: number; compiledBefore: number };
    jobNew: { compiled: number; loaded: number; compiledBefore: number };
    save: { outcome: string; entriesNew: number; leftOutUnverified: number };
  };
  rounds: {
    round: number;
    plainJobSeconds: number;
    buildSeconds: number;
    sharedEntries: number;
    linked: number;
    copied: number;
    jobSeconds: number;
    jobCompiled: number;
    mergeSeconds: number;
    merged: number;
  }[];
}

/** What building and merging an isolated job's folder cost, as a share of the warm job's time, per round. */
export const isolationShare = (r: GpuPersistentRaw["rounds"][number]) =>
  (r.buildSeconds + r.mergeSeconds) / r.plainJobSeconds;

/** The persistent-runner tables: a restore that misses on a warm folder, and isolation's cost per round. */
export function gpuPersistentTables(raw: GpuPersistentRaw): string[] {
  const m = raw.miss;
  return [
    "| step | entries in the folder before | kernels compiled | of them already in the folder | loaded from the folder |",
    "|---|---:|---:|---:|---:|",
    `| kcache restore (the store has no key yet) | ${m.restore.entriesBefore} | - | - | - |`,
    `| the job (${raw.kernels} kernels) | ${m.restore.entriesBefore} | ${m.job.compiled} | ${m.job.compiledBefore} | ${m.job.loaded} |`,
    `| the job with ${raw.new} new kernels | ${m.restore.entriesBefore} | ${m.jobNew.compiled} | ${m.jobNew.compiledBefore} | ${m.jobNew.loaded} |`,
    "",
    "| round | warm job in the folder | build the job's folder (entries; files linked / copied) | the job in its folder (compiled) | merge back (entries placed) | build + merge / warm job |",
    "|---:|---:|---|---:|---:|---:|",
    ...raw.rounds.map(
      (r) =>
        `| ${r.round} | ${r.plainJobSeconds.toFixed(2)} s | ${(r.buildSeconds * 1000).toFixed(1)} ms (${r.sharedEntries}; ${r.linked} / ${r.copied}) | ${r.jobSeconds.toFixed(2)} s (${r.jobCompiled}) | ${(r.mergeSeconds * 1000).toFixed(1)} ms (${r.merged}) | ${(isolationShare(r) * 100).toFixed(2)}% |`,
    ),
    `| median | | | | | ${(median(raw.rounds.map(isolationShare)) * 100).toFixed(2)}% |`,
  ];
}

/** One job of bench/gpu/fla-compare-on-device.sh's compare phase (bench/results/gpu-fla-compare.json). */
export interface FlaCompareRow {
  label: string;
  kind: "prewarm" | "clearing" | "kcache";
  exit: number;
  wall: number;
  /** Records beyond FLA's 5% threshold, either way: false flags, as BASE and HEAD are the same code. */
  flags: number;
  records: { record: string; base_ms: number; head_ms: number; change_pct: number }[];
  compiled?: number;
  loaded?: number;
  given?: number;
  givenFrom?: string | null;
  tuned?: number;
}

const maxAbsChange = (r: FlaCompareRow) => Math.max(...r.records.map((x) => Math.abs(x.change_pct)));

/** Per round: FLA's clearing job beside kcache's, wall time, flags, the largest HEAD-vs-BASE change, and the ratio. */
export function flaCompareTable(rows: FlaCompareRow[]): string[] {
  const clearing = rows.filter((r) => r.kind === "clearing");
  const kc = rows.filter((r) => r.kind === "kcache");
  const lines = [
    "| round | FLA's job (clears the cache) | flags | largest change | kcache's job (pinned, both sides warm) | kernels compiled | winners given / tuned | flags | largest change | kcache / clearing |",
    "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
  ];
  clearing.forEach((c, i) => {
    const k = kc[i];
    if (!k) return;
    lines.push(
      `| ${i + 1} | ${c.wall.toFixed(1)} s | ${c.flags} | ${maxAbsChange(c).toFixed(1)}% | ${k.wall.toFixed(1)} s | ${k.compiled} | ${k.given} / ${k.tuned} (${k.givenFrom}) | ${k.flags} | ${maxAbsChange(k).toFixed(1)}% | ${((k.wall / c.wall) * 100).toFixed(0)}% |`,
    );
  });
  const ratios = clearing.flatMap((c, i) => (kc[i] ? [(kc[i] as FlaCompareRow).wall / c.wall] : []));
  lines.push(`| median | | | | | | | | | ${(median(ratios) * 100).toFixed(0)}% |`);
  return lines;
}

/** One job of the edit phase (bench/results/gpu-fla-edit.json's rows). */
export interface FlaEditRow {
  label: string;
  wall: number;
  flags?: number;
  pinned?: string[];
  fresh?: [string, string][];
  withheld?: [string, string][];
  pinnedFrom?: string[];
}

/** The edit phase: with the salt the edited op's kernels re-tune on both sides; without it only the edited kernel. */
export function flaEditTable(rows: FlaEditRow[]): string[] {
  const what: Record<string, string> = {
    prewarm: "main's prewarm at BASE (cold)",
    "edit-salt": "the comparison, autotune-salt: package",
    "edit-kernel": "the comparison, no salt (Triton's key alone)",
  };
  return [
    "| job | wall | withheld at restore | kernels on given winners | kernels tuned in the job (why) | flags |",
    "|---|---:|---|---|---|---:|",
    ...rows.map((r) => {
      const withheld = [...new Set((r.withheld ?? []).map(([k, why]) => `${k} (${why})`))];
      const fresh = [...new Set((r.fresh ?? []).map(([k, why]) => `${k}: ${why}`))];
      return `| ${what[r.label] ?? r.label} | ${r.wall.toFixed(1)} s | ${withheld.length ? `${r.withheld?.length}: ${withheld.join("; ")}` : "none"} | ${(r.pinned ?? []).join(", ") || "none"}${r.pinnedFrom?.length ? ` (${r.pinnedFrom.join(", ")})` : ""} | ${fresh.join("; ") || "none"} | ${r.flags ?? "-"} |`;
    }),
  ];
}

/** bench/results/gpu-fla-probe.json: where FLA's HEAD-vs-BASE job spends its time, per side (bench/gpu/fla-probe-on-device.sh). */
export interface FlaProbe {
  steps: Record<"pip-install" | "import", { wall: number; exit: number }>;
  jobs: {
    op: string;
    job: "clearing" | "warm";
    wall: number;
    exit: number;
    sides: { side: "HEAD" | "BASE"; seconds: number; finished: boolean }[];
  }[];
}

/** The script's own work per job beside its two sides: three `pip install -e .` and FLA_BENCH_COOLDOWN_SEC (3 s). */
const scriptSeconds = (p: FlaProbe) => 3 * p.steps["pip-install"].wall + 3;

/**
 * The share of the clearing job a perfect cache's job takes: both sides as fast as the fastest warm side
 * measured, against both sides as slow as a finished cold side, with the script's own work in both.
 */
export function flaProbeFloor(p: FlaProbe, op: string): number {
  const sides = (job: string) => p.jobs.filter((j) => j.op === op && j.job === job).flatMap((j) => j.sides);
  const cold = Math.max(
    ...sides("clearing")
      .filter((s) => s.finished)
      .map((s) => s.seconds),
  );
  const warm = Math.min(...sides("warm").map((s) => s.seconds));
  return (2 * warm + scriptSeconds(p)) / (2 * cold + scriptSeconds(p));
}

export function flaProbeTable(p: FlaProbe): string[] {
  const what = {
    clearing: "FLA's (clears the cache before each side)",
    warm: "warm (TRITON_CACHE_DIR at that folder)",
  };
  const side = (j: FlaProbe["jobs"][number], name: string) => {
    const s = j.sides.find((x) => x.side === name);
    return !s ? "-" : s.finished ? `${s.seconds.toFixed(1)} s` : `over ${s.seconds.toFixed(1)} s (cut)`;
  };
  return [
    "| op | job | HEAD side | BASE side | job | exit |",
    "|---|---|---:|---:|---:|---:|",
    ...p.jobs.map(
      (j) =>
        `| ${j.op} | ${what[j.job]} | ${side(j, "HEAD")} | ${side(j, "BASE")} | ${j.wall.toFixed(1)} s | ${j.exit} |`,
    ),
  ];
}

/** Issue 35's first step on the GPU machine: the same speed bench before and after threads were sized by the work. */
export function threadsBySizeTable(before: SpeedRaw, after: SpeedRaw): string[] {
  const lines = [
    "| cache | operation | before: kcache (x tar+zstd) | before: peak RSS | after: kcache (x tar+zstd) | after: peak RSS |",
    "|---|---|---:|---:|---:|---:|",
  ];
  for (const b of before.sizes) {
    const a = after.sizes.find((z) => z.size === b.size);
    if (!a) continue;
    for (const op of ["restore", "save"] as const) {
      const cell = (z: SpeedRaw["sizes"][number]) => {
        const k = z[op].kcache.map((r) => r.s);
        const t = z[op].tar.map((r) => r.s);
        const ratio = median(k.map((v, i) => v / (t[i] as number)));
        return `${fmtSeconds(median(k))} (${ratio.toFixed(2)}x) | ${mb(median(z[op].kcache.map((r) => r.rss)))}`;
      };
      lines.push(
        `| ${b.size} (${mb(b.bytes)}) | ${op === "save" ? "full save" : op} | ${cell(b)} | ${cell(a)} |`,
      );
    }
  }
  return lines;
}

/** bench/results/gpu-profiles-*.json (bench/profile-summary.mjs over bench/gpu/profile-on-device.sh's CPU profiles). */
export type ProfileSummary = Record<
  string,
  { ms?: { total: number; moduleLoading: number; gc: number; idle: number }; mb?: number }
>;

/** Per command: the main thread's sampled time and where it went, and its worker threads' module loading. */
export function profileTable(p: ProfileSummary): string[] {
  const lines = [
    "| command | main thread sampled | loading modules | garbage collection | idle (waiting) | worker threads | each worker loading modules (median) |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const name of ["key", "miss", "restore-small", "save-small"]) {
    const files = Object.entries(p).filter(([f, v]) => f.startsWith(`${name}-CPU.`) && v.ms);
    const main = files.find(([f]) => /\.0\.001\.cpuprofile$/.test(f))?.[1].ms;
    if (!main) continue;
    const workers = files
      .filter(([f]) => !/\.0\.001\.cpuprofile$/.test(f))
      .map(([, v]) => v.ms?.moduleLoading ?? 0);
    lines.push(
      `| ${name} | ${main.total.toFixed(0)} ms | ${main.moduleLoading.toFixed(0)} ms | ${main.gc.toFixed(0)} ms | ${main.idle.toFixed(0)} ms | ${workers.length} | ${workers.length ? `${median(workers).toFixed(0)} ms` : "-"} |`,
    );
  }
  return lines;
}
