import type { CompareReport } from "../pipeline/compare.js";
import { compareMarkdown, lazyRunsLine, winnersLine } from "./compare-markdown.js";
import { escapeHtml } from "./html-escape.js";

/**
 * A self-contained HTML page: the report's data embedded as JSON, drawn by an inline script into SVG
 * charts (cold vs warm per command, a stage timeline of one cold and one warm run, per-record timing
 * changes with the threshold), with the same numbers in tables. No network, no external files.
 */
export function compareHtml(r: CompareReport): string {
  const data = JSON.stringify(r).replace(/</g, "\\u003c");
  const md = escapeHtml(compareMarkdown(r));
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>kcache compare: ${escapeHtml(r.profile)}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; color: #1d1d1f; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.headline { font-size: 1.1rem; background: #f3f6fb; padding: .8rem 1rem; border-radius: 6px; }
svg text { font-size: 12px; fill: #333; }
.cold { fill: #d9822b; } .warm { fill: #2b7bd9; } .stage-restore, .stage-save { fill: #7a7a7a; }
.stage-command { fill: #2b9a66; } .stage-checks { fill: #b5b5b5; }
.change.faster { fill: #2b9a66; } .change.slower { fill: #d9822b; } .change.flagged { stroke: #b3261e; stroke-width: 2; }
.spread { stroke: #222; } .threshold { stroke: #d93a2b; stroke-dasharray: 4 3; }
.legend span { display: inline-block; width: .8rem; height: .8rem; margin: 0 .3rem 0 1rem; vertical-align: middle; }
table { border-collapse: collapse; margin: .5rem 0; } td, th { border: 1px solid #ddd; padding: .25rem .5rem; text-align: right; }
td:first-child, th:first-child { text-align: left; }
details pre { white-space: pre-wrap; background: #f7f7f7; padding: .5rem; }
</style>
</head>
<body>
<h1>kcache compare: <code>${escapeHtml(r.profile)}</code></h1>
<p class="headline" id="headline"></p>
<h2>Cold vs warm, median seconds per command</h2>
<svg id="bars" role="img" aria-label="cold and warm run times per command"></svg>
<table id="bars-table"></table>
<h2>Stages of one cold and one warm run</h2>
<svg id="timeline" role="img" aria-label="stage timeline"></svg>
<h2>Per-record timing change, warm vs cold</h2>
<p id="winners">${escapeHtml(winnersLine(r))}</p>
${lazyRunsLine(r) ? `<p id="lazy">${escapeHtml(lazyRunsLine(r) as string)}</p>` : ""}
<p id="records-note"></p>
<p class="legend"><span style="background:#2b9a66"></span>faster warm than cold
<span style="background:#d9822b"></span>slower <span style="border:2px solid #b3261e"></span>beyond the threshold
(dashed lines) <span style="border-top:2px solid #222;height:0"></span>spread of the rounds</p>
<svg id="changes" role="img" aria-label="per-record timing change"></svg>
<details><summary>The same report as Markdown</summary><pre>${md}</pre></details>
<script type="application/json" id="kcache-data">${data}</script>
<script>
(function () {
  var r = JSON.parse(document.getElementById("kcache-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  function el(parent, name, attrs, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  function fmt(s) { return s.toFixed(2) + " s"; }
  var x = r.summary;
  document.getElementById("headline").textContent =
    "Warm runs took " + fmt(x.warm.median) + " against " + fmt(x.cold.median) + " cold (median of " + r.rounds +
    " each): " + fmt(x.savedSeconds) + " saved, " + x.reductionPct.toFixed(1) + "% less. Kernels compiled: cold " +
    x.kernelsCompiled.cold.join(", ") + "; warm " + x.kernelsCompiled.warm.join(", ") + ".";

  // Bars: each command and the whole profile, cold over warm.
  var rows = x.commands.map(function (c) { return { name: c.name, cold: c.cold, warm: c.warm }; });
  rows.push({ name: "whole profile", cold: x.cold, warm: x.warm });
  var max = Math.max.apply(null, rows.map(function (q) { return Math.max(q.cold.max, q.warm.max); })) || 1;
  var bars = document.getElementById("bars"), W = 940, L = 170, RW = W - L - 80, H = rows.length * 46 + 10;
  bars.setAttribute("width", W); bars.setAttribute("height", H);
  var table = document.getElementById("bars-table");
  table.innerHTML = "<tr><th>command</th><th>cold median</th><th>warm median</th><th>saved</th></tr>";
  rows.forEach(function (q, i) {
    var y = 8 + i * 46;
    el(bars, "text", { x: 0, y: y + 22 }, q.name);
    ["cold", "warm"].forEach(function (kind, j) {
      var s = q[kind];
      var w = Math.max(1, (s.median / max) * RW);
      el(bars, "rect", { class: "bar " + kind, x: L, y: y + j * 18, width: w, height: 15, "data-command": q.name, "data-kind": kind, "data-seconds": s.median.toFixed(3) });
      el(bars, "line", { x1: L + (s.min / max) * RW, x2: L + (s.max / max) * RW, y1: y + j * 18 + 7.5, y2: y + j * 18 + 7.5, stroke: "#222" });
      el(bars, "text", { x: L + Math.max(w, (s.max / max) * RW) + 6, y: y + j * 18 + 12 }, kind + " " + fmt(s.median));
    });
    var tr = document.createElement("tr");
    tr.innerHTML = "<td>" + q.name + "</td><td>" + fmt(q.cold.median) + "</td><td>" + fmt(q.warm.median) + "</td><td>" + fmt(q.cold.median - q.warm.median) + "</td>";
    table.appendChild(tr);
  });

  // Timeline: the first cold and the first warm run, stage by stage.
  var pick = [r.runs.find(function (q) { return q.kind === "cold"; }), r.runs.find(function (q) { return q.kind === "warm"; })].filter(Boolean);
  var tl = document.getElementById("timeline"), tmax = Math.max.apply(null, pick.map(function (q) { return q.seconds; })) || 1;
  tl.setAttribute("width", W); tl.setAttribute("height", pick.length * 40 + 20);
  pick.forEach(function (run, i) {
    var y = 10 + i * 40, t = 0;
    el(tl, "text", { x: 0, y: y + 17 }, run.label);
    run.stages.forEach(function (st) {
      var w = (st.seconds / tmax) * RW;
      var kind = st.kind === "group" ? "command" : st.kind;
      var rect = el(tl, "rect", { class: "stage stage-" + kind, x: L + (t / tmax) * RW, y: y, width: Math.max(0.5, w), height: 24, "data-run": run.label, "data-stage": st.name, "data-seconds": st.seconds.toFixed(3) });
      el(rect, "title", {}, st.name + ": " + fmt(st.seconds) + " (" + st.summary + ")");
      if (w > 60) el(tl, "text", { x: L + (t / tmax) * RW + 4, y: y + 16, fill: "#fff" }, st.name);
      t += st.seconds;
    });
    el(tl, "text", { x: L + (t / tmax) * RW + 6, y: y + 17 }, fmt(run.seconds));
  });

  // Per-record changes: diverging bars around zero, threshold lines, flagged in red.
  var d = r.records, ch = document.getElementById("changes"), note = document.getElementById("records-note");
  if (!d || !d.rows.length) { note.textContent = "No result file was compared (set compare: in the profile, or --file and --key)."; return; }
  var lim = Math.max(d.threshold * 100 * 1.5, Math.max.apply(null, d.rows.map(function (q) {
    return Math.max(Math.abs(q.changePct), q.spreadPct ? Math.max(Math.abs(q.spreadPct[0]), Math.abs(q.spreadPct[1])) : 0);
  })));
  // Labels are never cut: the label column is as wide as the longest label.
  var label = function (q) { return d.metrics.length > 1 ? q.id + " " + q.metric : q.id; };
  var LL = Math.min(520, 12 + 7 * Math.max.apply(null, d.rows.map(function (q) { return label(q).length; })));
  var CW = Math.max(W, LL + 600), CR = CW - LL - 90;
  var mid = LL + CR / 2, scale = (CR / 2) / lim, CH = d.rows.length * 20 + 30;
  ch.setAttribute("width", CW); ch.setAttribute("height", CH);
  note.textContent = d.rows.length + " record timings matched on " + d.key.join(", ") + "; " + d.flagged + " moved more than " + (d.threshold * 100).toFixed(0) + "%.";
  [-1, 1].forEach(function (sgn) {
    var xx = mid + sgn * d.threshold * 100 * scale;
    el(ch, "line", { class: "threshold", x1: xx, x2: xx, y1: 0, y2: CH - 20 });
  });
  el(ch, "line", { x1: mid, x2: mid, y1: 0, y2: CH - 20, stroke: "#222" });
  d.rows.forEach(function (q, i) {
    var y = 6 + i * 20, w = Math.abs(q.changePct) * scale;
    var t = el(ch, "text", { x: 0, y: y + 12, class: "record-label" }, label(q));
    el(t, "title", {}, label(q));
    var dir = q.changePct < 0 ? "faster" : "slower";
    el(ch, "rect", { class: "change " + dir + (q.flagged ? " flagged" : ""), x: q.changePct < 0 ? mid - w : mid, y: y, width: Math.max(0.5, w), height: 14, "data-id": q.id, "data-change": q.changePct.toFixed(2) });
    var far = Math.abs(q.changePct) * scale;
    if (q.spreadPct) {
      var x1 = mid + q.spreadPct[0] * scale, x2 = mid + q.spreadPct[1] * scale;
      el(ch, "line", { class: "spread", x1: x1, x2: x2, y1: y + 7, y2: y + 7, "data-id": q.id });
      far = Math.max(Math.abs(q.spreadPct[0]), Math.abs(q.spreadPct[1])) * scale;
    }
    // The value goes past the bar and its whisker, on the bar's side: nothing is drawn over it.
    var vx = q.changePct < 0 ? mid - far - 6 : mid + far + 6;
    el(ch, "text", { x: vx, y: y + 12, "text-anchor": q.changePct < 0 ? "end" : "start", class: "change-value" }, (q.changePct >= 0 ? "+" : "") + q.changePct.toFixed(1) + "%");
  });
})();
</script>
</body>
</html>
`;
}
