import { wholeWords } from "../cache/lazy/lazy-plan.js";
import { formatRange } from "../checks/record-diff.js";
import { formatBytes } from "../format.js";
import type { CompareReport, CompareRun } from "../pipeline/compare.js";

const s = (v: number) => `${v.toFixed(2)} s`;

/** The comparison as Markdown: the headline saving, per command, kernels, kcache's own cost, records. */
export function compareMarkdown(r: CompareReport): string {
  const x = r.summary;
  const lines = [
    `### kcache compare \`${r.profile}\`: warm runs ${x.reductionPct.toFixed(0)}% faster`,
    "",
    `${r.rounds} cold and ${r.rounds} warm runs, alternating, on one machine at revision \`${r.revision.slice(0, 12)}\` (stack ${r.stackId}). Cold: empty cache folders, nothing restored. Warm: restored from the store.`,
    "",
    "| | cold median (range) | warm median (range) | saved | reduction |",
    "|---|---|---|---:|---:|",
    ...x.commands.map(
      (c) =>
        `| ${c.name} | ${s(c.cold.median)} (${s(c.cold.min)}–${s(c.cold.max)}) | ${s(c.warm.median)} (${s(c.warm.min)}–${s(c.warm.max)}) | ${s(c.savedSeconds)} | ${c.reductionPct.toFixed(1)}% |`,
    ),
    `| **whole profile** | **${s(x.cold.median)}** (${s(x.cold.min)}–${s(x.cold.max)}) | **${s(x.warm.median)}** (${s(x.warm.min)}–${s(x.warm.max)}) | **${s(x.savedSeconds)}** | **${x.reductionPct.toFixed(1)}%** |`,
    "",
    `Kernels compiled per run: cold ${x.kernelsCompiled.cold.join(", ")}; warm ${x.kernelsCompiled.warm.join(", ")}. kcache's own time: restore ${s(x.restoreSeconds.median)} (median of warm runs), save ${x.saveSeconds.values.length ? s(x.saveSeconds.median) : "-"} (the seeding run).`,
  ];
  lines.push("", winnersLine(r));
  const lazy = lazyRunsLine(r);
  if (lazy) lines.push("", lazy);
  if (r.records) {
    const d = r.records;
    lines.push(
      "",
      `Per record (${d.rows.length / Math.max(1, d.metrics.length)} records matched on ${d.key.join(", ")}), warm vs cold: ${d.metrics
        .filter((m) => d.range[m])
        .map((m) => `${m} ${formatRange(d.range[m] as [number, number])}`)
        .join(
          "; ",
        )}. ${d.flagged ? `**${d.flagged} moved more than ${(d.threshold * 100).toFixed(0)}%**:` : `None moved more than ${(d.threshold * 100).toFixed(0)}%: the steady-state timings did not change; the saving is compilation.`}`,
    );
    for (const row of d.rows.filter((x) => x.flagged).slice(0, 20)) {
      lines.push(
        `- ⚠️ ${row.id} ${row.metric}: ${row.base.toPrecision(4)} → ${row.head.toPrecision(4)} (${row.changePct >= 0 ? "+" : ""}${row.changePct.toFixed(1)}%)`,
      );
    }
    if (d.missing.length || d.extra.length)
      lines.push(`Records only in cold runs: ${d.missing.length}; only in warm runs: ${d.extra.length}.`);
  }
  return `${lines.join("\n")}\n`;
}

/**
 * What the warm runs' lazy restores fetched (restore: lazy, store.live), one number per run: ahead,
 * when looked up, never needed, bytes read and seconds waited. Null when no run had one.
 */
export function lazyRunsLine(r: CompareReport): string | null {
  const warm = r.runs.filter((x) => x.kind === "warm" && x.lazy);
  if (!warm.length) return null;
  const each = (f: (l: NonNullable<CompareRun["lazy"]>) => string) =>
    warm.map((x) => f(x.lazy as NonNullable<CompareRun["lazy"]>)).join(", ");
  return `Lazy restore, warm runs: entries fetched ahead ${each((l) => String(l.prefetched))}; fetched when looked up ${each((l) => String(l.onDemand))}; found live ${each((l) => String(l.live))}; never needed ${each((l) => String(l.neverFetched))}; bytes read on demand ${each((l) => formatBytes(l.bytesRead))}; lookups waited ${each((l) => `${l.waitSeconds.toFixed(2)} s`)}; packs read whole before the job ${each((l) => wholeWords(l.readWhole) ?? "none")}.`;
}

/**
 * Whether the warm runs' timings came from winners the job was given (pinned: the same in every
 * run) or from autotuning again: what a drift between cold and warm medians has to be read beside.
 */
export function winnersLine(r: CompareReport): string {
  const warm = r.runs.filter((x) => x.kind === "warm");
  const cold = r.runs.filter((x) => x.kind === "cold");
  const given = warm.map((x) => x.autotune.given);
  const tuned = warm.map((x) => x.autotune.tuned);
  if (given.every((n) => n === 0) && tuned.every((n) => n === 0) && cold.every((x) => x.autotune.tuned === 0))
    return "Autotune winners: no autotune lookups were seen (no hook, or no autotuned kernel).";
  const producers = [...new Set(warm.flatMap((x) => x.autotune.producers))];
  return `Autotune winners: cold runs tuned ${cold.map((x) => x.autotune.tuned).join(", ")}; warm runs ran on ${given.join(", ")} given winners${producers.length ? ` (from ${producers.join("; ")})` : ""} and tuned ${tuned.join(", ")} afresh. ${tuned.some((n) => n > 0) ? "Timings that moved may come from re-tuned winners." : "Every warm timing ran on the same winners: a drift is not autotune's."}`;
}
