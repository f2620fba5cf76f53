/**
 * BENCHMARKS.md's timelines of a command's main thread, from bench/gpu/restore-profile-on-device.sh's
 * CPU profiles as bench/profile-phases.mjs reads them (bench/results/gpu-profile-*.json): when the
 * main thread had loaded and validated, read the packs, waited on the pickle rewriter, and finished.
 */

/** One named function's span in a profile: first sample, last sample, and its samples' total. */
interface Span {
  fromMs: number | null;
  toMs: number | null;
  ms: number;
}

/** bench/profile-phases.mjs's output: per profile file, the main thread's sampled time and the spans. */
export type Phases = Record<string, { totalMs: number; phases: Record<string, Span> }>;

const ms = (n: number | null | undefined) => (n === null || n === undefined ? "-" : `${n.toFixed(0)} ms`);
const span = (s: Span | undefined) => (s && s.fromMs !== null ? `${ms(s.fromMs)}–${ms(s.toMs)}` : "-");

/** bench/profile-summary.mjs's output, per profile file: the sampled time by what it went to. */
export type Summaries = Record<string, { ms?: { total: number; moduleLoading: number; idle: number } }>;

/** A GPU profile run (bench/results/gpu-profile-*.json). */
export interface ProfileRun {
  restorePhases: Phases;
  savePhases?: Phases;
  profiles: Summaries;
}

/** Main-thread profiles (thread 0), labelled by cache and round, with their summaries. */
function mainThreads(phases: Phases, profiles: Summaries) {
  return Object.entries(phases)
    .filter(([f]) => /\.0\.001\.cpuprofile$/.test(f))
    .map(([f, v]) => ({ label: f.replace(/-CPU\..*$/, ""), ...v, summary: profiles[f]?.ms }))
    .sort((a, b) => a.label.localeCompare(b.label));
}

/** A restore's main thread: loaded and configured by, manifest decoded by, packs read, idle, what followed. */
export function restorePhasesTable(run: ProfileRun): string[] {
  const lines = [
    "| restore (cache-round) | main thread | loading modules | kcache.yml validated by | manifest decoded by | packs read (with this thread's share) | idle (threads, the rewriter) | after this thread's last pack byte (workers and rewrites finishing, scan, autotune check, state) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const { label, totalMs, phases: p, summary } of mainThreads(run.restorePhases, run.profiles)) {
    const packsEnd = p.readPack?.toMs ?? null;
    lines.push(
      `| ${label} | ${ms(totalMs)} | ${ms(summary?.moduleLoading)} | ${ms(p.validatedConfig?.toMs)} | ${ms(p.decodeManifest?.toMs)} | ${span(p.readPack)} | ${ms(summary?.idle)} | ${packsEnd === null ? "-" : ms(totalMs - packsEnd)} |`,
    );
  }
  return lines;
}

/** Where a save's packs were built: from writePacks' start to the last sample in it or in a pack build (stream callbacks). */
function packs(p: Record<string, Span>): Span | undefined {
  const w = p.writePacks;
  if (!w || w.fromMs === null) return undefined;
  return { fromMs: w.fromMs, toMs: Math.max(w.toMs ?? 0, p.buildPack?.toMs ?? 0), ms: w.ms };
}

/** A full save's main thread: loaded and configured by, scanned, packs built, idle. */
export function savePhasesTable(run: ProfileRun): string[] {
  const lines = [
    "| full save (cache-round) | main thread | loading modules | kcache.yml validated by | scan | packs built and written | idle (threads, the rewriter) |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const { label, totalMs, phases: p, summary } of mainThreads(run.savePhases ?? {}, run.profiles)) {
    lines.push(
      `| ${label} | ${ms(totalMs)} | ${ms(summary?.moduleLoading)} | ${ms(p.validatedConfig?.toMs)} | ${span(p.scanForSave)} | ${span(packs(p))} | ${ms(summary?.idle)} |`,
    );
  }
  return lines;
}
