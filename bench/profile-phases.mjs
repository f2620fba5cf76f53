#!/usr/bin/env node
// When a command's main thread did what (bench/gpu/restore-profile-on-device.sh): for each named
// function, the first and last moment (ms from the profile's start) a sample was inside it, and the
// time sampled inside it; with the profile's length. Async work shows as phases this way, where a
// call tree cuts it at each await.
// Usage: node bench/profile-phases.mjs fnA,fnB,... <.cpuprofile>... > phases.json
import fs from "node:fs";
import path from "node:path";

function phases(p, names) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const out = Object.fromEntries(names.map((n) => [n, { fromMs: null, toMs: null, ms: 0 }]));
  let t = p.startTime;
  p.samples.forEach((id, i) => {
    t += p.timeDeltas[i] ?? 0;
    const at = Math.round((t - p.startTime) / 100) / 10;
    const next = (p.timeDeltas[i + 1] ?? 0) / 1000;
    const seen = new Set();
    for (let n = id; n !== undefined; n = parent.get(n)) {
      const name = byId.get(n).callFrame.functionName;
      const phase = out[name];
      if (!phase || seen.has(name)) continue;
      seen.add(name);
      phase.fromMs ??= at;
      phase.toMs = at;
      phase.ms = Math.round((phase.ms + next) * 10) / 10;
    }
  });
  return { totalMs: Math.round((p.endTime - p.startTime) / 100) / 10, phases: out };
}

const [list, ...files] = process.argv.slice(2);
const names = (list ?? "").split(",").filter(Boolean);
const result = {};
for (const f of files) result[path.basename(f)] = phases(JSON.parse(fs.readFileSync(f, "utf8")), names);
process.stdout.write(`${JSON.stringify(result, null, 1)}\n`);
