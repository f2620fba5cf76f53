import { formatBytes } from "../format.js";
import { LAZY_COLUMNS, lazyCells, type WeekStats } from "../history/stats.js";
import type { PrefixWorkingSet } from "../history/working-sets.js";
import { escapeHtml } from "./html-escape.js";
import {
  estimateLines,
  WEEK_COLUMNS,
  WORKING_SET_COLUMNS,
  weekCells,
  workingSetCaption,
  workingSetCells,
} from "./stats-tables.js";

export interface StatsPage {
  store: string;
  scope: string;
  runs: number;
  weeks: WeekStats[];
  /** Bytes of packs each prefix's keys reference now. */
  storeBytes: Record<string, number>;
  /** Each prefix's newest key's working set, in `workingScope` (as the text shows it); absent: none. */
  workingSets?: PrefixWorkingSet[];
  workingScope?: string;
}

/**
 * `kcache stats --html`: a self-contained page (data embedded as JSON, drawn by an inline script into
 * SVG; no network) with, per workload prefix and week, the hit rate and the median Triton compile
 * seconds of missed and of exact-hit runs, and every table and line the text output has: the
 * working sets, the weeks, the lazy restores and live sharing, and what the saved seconds are
 * estimated with.
 */
export function statsHtml(p: StatsPage): string {
  const data = JSON.stringify(p).replace(/</g, "\\u003c");
  const prefixes = [...new Set(p.weeks.map((w) => w.prefix))];
  const table = (id: string, columns: readonly string[], rows: string[][]) =>
    `<table id="${id}">\n<tr>${columns.map((c) => `<th>${escapeHtml(c)}</th>`).join("")}</tr>\n${rows
      .map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`)
      .join("\n")}\n</table>`;
  const sets = p.workingSets ?? [];
  const setsTable = sets.length
    ? `<h2>Working sets</h2>\n<p>${escapeHtml(workingSetCaption(p.workingScope ?? p.scope))}</p>\n${table("working-sets", WORKING_SET_COLUMNS, sets.map(workingSetCells))}\n`
    : "";
  const estimates = estimateLines(p.weeks)
    .map((l) => `<p class="estimate">${escapeHtml(l)}</p>`)
    .join("\n");
  const lazyRows = p.weeks.flatMap((w) => {
    const cells = lazyCells(w);
    return cells ? [`<tr>${cells.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`] : [];
  });
  const lazyTable = lazyRows.length
    ? `<h2>Lazy restores and live sharing</h2>
<table id="lazy">
<tr>${LAZY_COLUMNS.map((c) => `<th>${c}</th>`).join("")}</tr>
${lazyRows.join("\n")}
</table>
`
    : "";
  // Only series some week has a value for: a legend entry for nothing drawn misleads.
  const has = (f: (w: WeekStats) => number | null | undefined) => p.weeks.some((w) => f(w) != null);
  const legend = [
    has((w) => w.hitRate) && '<span class="hit" style="background:#2b9a66"></span>hit rate (left axis)',
    has((w) => w.compileSecondsCold) &&
      '<span style="background:#d9822b"></span>compile s, runs that missed (right axis)',
    has((w) => w.compileSecondsWarm) &&
      '<span style="background:#2b7bd9"></span>compile s, exact hits (right axis)',
  ]
    .filter(Boolean)
    .join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>kcache stats</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; color: #1d1d1f; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
svg text { font-size: 12px; fill: #333; }
.hit { fill: #2b9a66; } .cold { fill: #d9822b; } .warm { fill: #2b7bd9; }
.legend span { display: inline-block; width: .8rem; height: .8rem; margin: 0 .3rem 0 1rem; vertical-align: middle; }
table { border-collapse: collapse; margin: .5rem 0; } td, th { border: 1px solid #ddd; padding: .25rem .5rem; text-align: right; }
td:first-child, th:first-child { text-align: left; }
</style>
</head>
<body>
<h1>kcache stats</h1>
<p>${p.runs} runs of ${escapeHtml(p.scope)} in ${escapeHtml(p.store)}. The store holds ${
    Object.entries(p.storeBytes)
      .map(([x, b]) => `${formatBytes(b)} for ${escapeHtml(x)}`)
      .join(", ") || "no keys"
  }.</p>
<p class="legend">${legend}</p>
${prefixes.map((x, i) => `<h2>${escapeHtml(x)}</h2>\n<svg id="chart-${i}" data-prefix="${escapeHtml(x)}" role="img" aria-label="hit rate and compile seconds per week"></svg>`).join("\n")}
${setsTable}<h2>Per week</h2>
${table("weeks", WEEK_COLUMNS, p.weeks.map(weekCells))}
${estimates}
${lazyTable}<script>
const data = ${data};
const NS = "http://www.w3.org/2000/svg";
const el = (name, attrs, text) => {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
};
document.querySelectorAll("svg[data-prefix]").forEach((svg) => {
  const weeks = data.weeks.filter((w) => w.prefix === svg.dataset.prefix).slice().reverse();
  const maxS = Math.max(1e-9, ...weeks.flatMap((w) => [w.compileSecondsCold || 0, w.compileSecondsWarm || 0]));
  const col = 90, h = 160, top = 20;
  const width = 110 + weeks.length * col;
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(h + top + 40));
  // Axes: hit rate on the left (0-100%), compile seconds on the right (0 to the largest week).
  svg.appendChild(el("line", { class: "axis", x1: 45, y1: top, x2: 45, y2: top + h, stroke: "#888" }));
  svg.appendChild(el("line", { class: "axis", x1: 45, y1: top + h, x2: width - 55, y2: top + h, stroke: "#888" }));
  svg.appendChild(el("line", { class: "axis", x1: width - 55, y1: top, x2: width - 55, y2: top + h, stroke: "#888" }));
  svg.appendChild(el("text", { class: "tick", x: 40, y: top + 4, "text-anchor": "end" }, "100%"));
  svg.appendChild(el("text", { class: "tick", x: 40, y: top + h, "text-anchor": "end" }, "0%"));
  const anyS = weeks.some((w) => w.compileSecondsCold != null || w.compileSecondsWarm != null);
  if (anyS) {
    svg.appendChild(el("text", { class: "tick", x: width - 50, y: top + 4 }, maxS.toFixed(1) + " s"));
    svg.appendChild(el("text", { class: "tick", x: width - 50, y: top + h }, "0 s"));
  }
  weeks.forEach((w, i) => {
    const x = 50 + i * col;
    const bar = (cls, k, value, scale, label) => {
      if (value === null || value === undefined) return;
      const bh = (value / scale) * h;
      svg.appendChild(el("rect", { class: cls, x: x + k * 22, y: top + h - bh, width: 18, height: bh, "data-week": w.week, "data-value": Number(value).toFixed(3) }));
      svg.appendChild(el("text", { class: "value", x: x + k * 22 + 9, y: top + h - bh - 3, "text-anchor": "middle" }, label(value)));
    };
    const pct = (v) => Math.round(v * 100) + "%";
    const secs = (v) => v.toFixed(1) + " s";
    bar("hit", 0, w.hitRate, 1, pct);
    bar("cold", 1, w.compileSecondsCold, maxS, secs);
    bar("warm", 2, w.compileSecondsWarm, maxS, secs);
    svg.appendChild(el("text", { x, y: top + h + 16 }, w.week));
  });
});
</script>
</body>
</html>
`;
}
