#!/usr/bin/env node
// Summarises V8 profiles (node --cpu-prof, node --heap-prof) as BENCHMARKS.md keeps them: for a CPU
// profile the total sampled time, the share spent compiling and loading modules, in garbage
// collection, in child processes started synchronously, idle (waiting on I/O or threads), and the
// functions with the most self time; for a heap profile the allocation sites holding the most bytes
// at the sample. Usage: node bench/profile-summary.mjs <.cpuprofile|.heapprofile>... > summary.json
import fs from "node:fs";
import path from "node:path";

const where = (f) =>
  `${f.functionName || "(anonymous)"} ${path.basename(f.url || "")}${f.url ? `:${f.lineNumber + 1}` : ""}`;

function cpu(p) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const within = (id, names) => {
    for (let at = id; at !== undefined; at = parent.get(at))
      if (names.has(byId.get(at).callFrame.functionName)) return true;
    return false;
  };
  const buckets = { total: 0, moduleLoading: 0, gc: 0, syncChildProcesses: 0, idle: 0 };
  const LOADING = new Set([
    "compileSourceTextModule",
    "compileForInternalLoader",
    "moduleResolve",
    "link",
    "instantiate",
  ]);
  const SYNC_SPAWN = new Set(["spawnSync", "execFileSync", "execSync"]);
  p.samples.forEach((id, i) => {
    const us = p.timeDeltas[i] ?? 0;
    const n = byId.get(id);
    const name = n.callFrame.functionName;
    buckets.total += us;
    if (name === "(garbage collector)") buckets.gc += us;
    else if (name === "(idle)") buckets.idle += us;
    else if (within(id, SYNC_SPAWN)) buckets.syncChildProcesses += us;
    else if (within(id, LOADING)) buckets.moduleLoading += us;
    const k = where(n.callFrame);
    self.set(k, (self.get(k) ?? 0) + us);
  });
  const ms = (us) => Math.round(us / 100) / 10;
  return {
    ms: Object.fromEntries(Object.entries(buckets).map(([k, v]) => [k, ms(v)])),
    topSelf: [...self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([fn, us]) => ({ fn, ms: ms(us) })),
  };
}

function heap(p) {
  const sites = new Map();
  const walk = (n) => {
    const bytes = n.selfSize ?? 0;
    if (bytes) {
      const k = where(n.callFrame);
      sites.set(k, (sites.get(k) ?? 0) + bytes);
    }
    for (const c of n.children ?? []) walk(c);
  };
  walk(p.head);
  const total = [...sites.values()].reduce((a, b) => a + b, 0);
  return {
    mb: Math.round(total / 1e5) / 10,
    topSites: [...sites]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([fn, b]) => ({ fn, mb: Math.round(b / 1e5) / 10 })),
  };
}

const out = {};
for (const f of process.argv.slice(2)) {
  const p = JSON.parse(fs.readFileSync(f, "utf8"));
  out[path.basename(f)] = f.endsWith(".heapprofile") ? heap(p) : cpu(p);
}
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
