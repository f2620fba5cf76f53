import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "../../src");

/**
 * What each folder of src/ may import (docs/ARCHITECTURE.md explains why). "." is the files at the
 * top of src/ (errors, log, version, format, progress, process-alive), which every folder may use. A folder not
 * listed here may import nothing but ".": a new folder must be placed on the map.
 */
const MAY_IMPORT: Record<string, string[]> = {
  ".": [],
  keys: [],
  kinds: [],
  stack: [],
  telemetry: [],
  process: [],
  manifest: ["kinds"],
  config: ["kinds"],
  store: ["config"],
  pack: ["kinds", "manifest", "store"],
  checks: ["config", "process"],
  cache: ["keys", "kinds", "manifest", "pack", "store"],
  job: ["cache", "config", "keys", "kinds", "process", "stack", "store"],
  history: ["cache", "checks", "config", "keys", "store"],
  pipeline: [
    "cache",
    "checks",
    "config",
    "history",
    "job",
    "keys",
    "kinds",
    "manifest",
    "process",
    "stack",
    "store",
    "telemetry",
  ],
  report: ["cache", "checks", "history", "pipeline"],
  github: [
    "cache",
    "config",
    "job",
    "keys",
    "kinds",
    "pipeline",
    "process",
    "report",
    "stack",
    "store",
    "telemetry",
  ],
  ci: ["config", "github"],
  cli: [
    "cache",
    "checks",
    "ci",
    "config",
    "github",
    "history",
    "job",
    "keys",
    "kinds",
    "manifest",
    "pipeline",
    "process",
    "report",
    "stack",
    "store",
    "telemetry",
  ],
};

/** Every .ts file under src/ with the src/ files it imports (static and dynamic imports, type-only too). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".ts")) {
        const text = fs.readFileSync(p, "utf8");
        const deps = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) =>
          path.relative(SRC, path.resolve(path.dirname(p), (m[1] as string).replace(/\.js$/, ".ts"))),
        );
        graph.set(path.relative(SRC, p), deps);
      }
    }
  };
  walk(SRC);
  return graph;
}

const folderOf = (file: string) => (file.includes("/") ? (file.split("/")[0] as string) : ".");

describe("src/ import directions (docs/ARCHITECTURE.md)", () => {
  it("every folder of src/ is on the map, and every folder and top-level file is in docs/ARCHITECTURE.md", () => {
    const doc = fs.readFileSync(path.resolve(SRC, "../docs/ARCHITECTURE.md"), "utf8");
    const folders: string[] = [];
    const walk = (rel: string) => {
      for (const e of fs.readdirSync(path.join(SRC, rel), { withFileTypes: true }))
        if (e.isDirectory()) {
          const sub = rel ? `${rel}/${e.name}` : e.name;
          folders.push(sub);
          walk(sub);
        }
    };
    walk("");
    expect(folders.filter((f) => !f.includes("/") && !(f in MAY_IMPORT))).toEqual([]);
    expect(folders.filter((f) => !doc.includes(`\`${f}/\``))).toEqual([]);
    const topFiles = fs.readdirSync(SRC).filter((f) => f.endsWith(".ts"));
    expect(topFiles.filter((f) => !doc.includes(`\`${f}\``))).toEqual([]);
  });

  it("every import between folders goes the way the map allows", () => {
    const wrong: string[] = [];
    for (const [file, deps] of importGraph()) {
      const from = folderOf(file);
      const allowed = new Set([from, ".", ...(MAY_IMPORT[from] ?? [])]);
      for (const d of deps) if (!allowed.has(folderOf(d))) wrong.push(`${file} imports ${d}`);
    }
    expect(wrong).toEqual([]);
  });

  it("cache/ works on a job it is given: it never opens a store or reads kcache.yml itself", () => {
    const wrong = [...importGraph()]
      .filter(([file]) => folderOf(file) === "cache")
      .flatMap(([file, deps]) =>
        deps
          .filter((d) => d === "store/open.ts" || ["config", "stack", "report"].includes(folderOf(d)))
          .map((d) => `${file} imports ${d}`),
      );
    expect(wrong).toEqual([]);
  });

  it("has no import cycle between files", () => {
    const graph = importGraph();
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const visit = (f: string) => {
      state.set(f, "open");
      stack.push(f);
      for (const d of graph.get(f) ?? []) {
        if (state.get(d) === "open") cycles.push([...stack.slice(stack.indexOf(d)), d].join(" -> "));
        else if (!state.has(d)) visit(d);
      }
      stack.pop();
      state.set(f, "done");
    };
    for (const f of graph.keys()) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it("has no cycle between folders", () => {
    for (const [from, tos] of Object.entries(MAY_IMPORT))
      for (const to of tos) expect(MAY_IMPORT[to] ?? [], `${from} <-> ${to}`).not.toContain(from);
  });

  it('names cache kinds only in src/kinds/ and src/config/ (stack/ probes the Python package "triton")', () => {
    const outside = [...importGraph().keys()].filter((f) => {
      const folder = folderOf(f);
      if (folder === "kinds" || folder === "config" || folder === "stack") return false;
      return /["']triton["']|["']dir["']/.test(fs.readFileSync(path.join(SRC, f), "utf8"));
    });
    expect(outside).toEqual([]);
  });
});
