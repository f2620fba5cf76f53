import { useSource } from "../cache/usage/save-usage.js";
import { formatBytes } from "../format.js";
import { aheadLine } from "../pipeline/cpu-prewarm/ahead-report.js";
import type { RunReport, Stage } from "../pipeline/run-profile.js";

const STATUS: Record<Stage["status"], string> = { ok: "✅", failed: "❌", skipped: "⏭️", warned: "⚠️" };

/** The run as Markdown: a headline, a stage table with kernels per command, and the checks. */
export function runMarkdown(r: RunReport): string {
  const lines: string[] = [];
  lines.push(`### kcache run \`${r.profile}\`: ${r.passed ? "passed" : `failed at ${r.firstFailure}`}`);
  lines.push("");
  const restore = r.restore
    ? r.restore.matchedKey
      ? `restored ${r.restore.cacheHit ? "the exact key" : `\`${r.restore.matchedKey}\``} (${r.restore.entriesRestored} entries, ${formatBytes(r.restore.bytesRestored)})`
      : "cache miss"
    : "nothing restored";
  const k = r.kernels;
  const kernels =
    k.source === "listener"
      ? `${k.loaded} kernels loaded from cache, ${k.compiled} compiled (${(k.compileSeconds ?? 0).toFixed(1)} s)`
      : k.source === "cache-folder"
        ? `${k.compiled} kernels compiled (counted from the cache folder: this Triton has no compilation listener)`
        : k.status === "unavailable"
          ? "kernel telemetry unavailable (no compilation listener, and no Triton cache folder to count)"
          : "no Triton kernels seen";
  const g = k.graphs;
  const graphs = g
    ? ` · torch.compile: FX graph cache ${g.fxgraphHits} hits / ${g.fxgraphMisses} misses, AOTAutograd ${g.aotHits} / ${g.aotMisses}`
    : "";
  lines.push(
    `key \`${r.key}\` · ${restore} · ${kernels}${graphs} · ${r.save ? `save: ${r.save.outcome}` : (r.saveSkipped ?? "")}`,
  );
  lines.push("");
  lines.push("| stage | seconds | result | kernels loaded | compiled | compile s |");
  lines.push("|---|---:|---|---:|---:|---:|");
  const row = (s: Stage, indent: string) => {
    const c = s.kind === "command" ? r.commands.find((x) => x.name === s.name) : undefined;
    const k = c && c.kernels.source !== "none" ? c.kernels : null;
    const compiled = k ? k.compiled : s.folderKernels ? s.folderKernels.compiled : null;
    lines.push(
      `| ${indent}${STATUS[s.status]} ${s.name} | ${s.seconds.toFixed(2)} | ${s.summary} | ${k?.loaded ?? ""} | ${compiled ?? ""} | ${k?.compileSeconds?.toFixed(1) ?? ""} |`,
    );
    for (const child of s.children ?? []) row(child, `${indent}↳ `);
  };
  for (const s of r.stages) row(s, "");
  lines.push(
    `| **total** | **${r.seconds.toFixed(2)}** | | **${r.kernels.loaded ?? "?"}** | **${r.kernels.compiled}** | |`,
  );
  if (r.checks.length) {
    lines.push("");
    lines.push("| check | result |");
    lines.push("|---|---|");
    for (const c of r.checks) {
      const mark = c.passed ? "✅" : c.severity === "error" ? "❌" : "⚠️";
      lines.push(`| ${mark} ${c.name} | ${c.message.replace(/\|/g, "\\|")} |`);
    }
  }
  const u = r.save?.usage;
  if (u && (r.save?.outcome === "saved" || r.save?.outcome === "nothing-new"))
    lines.push(
      "",
      `Working set (${useSource(u)}): ${u.live.entries} entries (${formatBytes(u.live.bytes)}) used, ${u.unused.entries} (${formatBytes(u.unused.bytes)}) kept unused, ${u.evicted.entries} (${formatBytes(u.evicted.bytes)}) evicted${u.noEvict ? ` (none may be: ${u.noEvict})` : ""}.`,
    );
  lines.push(...autotuneLines(r));
  if (r.cpuPrewarm) lines.push("", aheadLine(r.cpuPrewarm));
  if (r.unexpectedCompile) lines.push("", `⚠️ ${r.unexpectedCompile}`);
  return `${lines.join("\n")}\n`;
}

/**
 * Per command, which kernels ran on a winner the job was given (and whose) and which were tuned in
 * the run (and why): the symmetry of a HEAD-vs-BASE comparison, at a glance.
 */
function autotuneLines(r: RunReport): string[] {
  const withAutotune = r.commands.filter((c) => c.autotune);
  if (withAutotune.length === 0) return [];
  const policy = r.restore?.autotune?.policy ?? "any";
  const lines = [
    "",
    `Autotune (policy: ${policy}${r.restore?.autotune?.withheld.length ? `; ${r.restore.autotune.withheld.length} results withheld at restore` : ""}):`,
  ];
  for (const c of withAutotune) {
    const a = c.autotune as NonNullable<typeof c.autotune>;
    const from = [
      ...new Set(
        a.pinned.map((p) =>
          p.producer
            ? `${p.producer.profile || "(no profile)"}@${p.producer.revision.slice(0, 12)}`
            : p.earlierInRun
              ? "this run"
              : "unknown",
        ),
      ),
    ];
    const why = [...new Set(a.fresh.map((f) => f.why))];
    lines.push(
      `- ${c.name}: ${a.pinned.length} kernels on given winners${from.length ? ` (${from.join(", ")})` : ""}, ${a.fresh.length} tuned here${why.length ? `: ${why.join("; ")}` : ""}`,
    );
  }
  return lines;
}
