#!/usr/bin/env node
// Records what one flash-linear-attention revision has that examples/fla-kda/kcache.yml relies on:
// the benchmark ops it registers, run.py's flags, its Python modules and test files, and its Ascend
// workflows' jobs (runner, container, environment, each step's commands). The developers run it
// against a fetched FLA (the `fetch` tool, or a clone) when they pin the example to a new revision:
//   node scripts/fla-facts.mjs <flash-linear-attention checkout> > examples/fla-kda/fla-facts.json
// test/examples/fla-kda.test.ts then holds every command of the example to these facts.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { parse } from "yaml";

const fla = process.argv[2];
if (!fla || !fs.existsSync(path.join(fla, "benchmarks/ops/run.py"))) {
  process.stderr.write("usage: node scripts/fla-facts.mjs <flash-linear-attention checkout>\n");
  process.exit(2);
}
const read = (rel) => fs.readFileSync(path.join(fla, rel), "utf8");
const git = (...args) => execFileSync("git", ["-C", fla, ...args], { encoding: "utf8" }).trim();

/** Every Python file under `dir` (relative to the checkout), sorted. */
function files(dir) {
  const out = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(fla, rel), { withFileTypes: true })) {
      const p = `${rel}/${e.name}`;
      if (e.isDirectory() && e.name !== "__pycache__") walk(p);
      else if (e.isFile() && e.name.endsWith(".py")) out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

/** A workflow's jobs as the example mirrors them: runner, container image, env, and each step's run and env. */
function jobs(file) {
  const wf = parse(read(`.github/workflows/${file}`));
  return Object.fromEntries(
    Object.entries(wf.jobs).map(([id, j]) => {
      const os = j.strategy?.matrix?.os;
      return [
        id,
        {
          runsOn: String(j["runs-on"]).includes("matrix.os") && os ? os : j["runs-on"],
          container: typeof j.container === "string" ? j.container : (j.container?.image ?? null),
          timeoutMinutes: j["timeout-minutes"] ?? null,
          env: j.env ?? {},
          steps: (j.steps ?? [])
            .filter((s) => s.run)
            .map((s) => ({ name: s.name ?? null, run: s.run, env: s.env ?? {} })),
        },
      ];
    }),
  );
}

const modules = files("benchmarks").map((f) => f.replace(/\.py$/, "").replaceAll("/", "."));
const facts = {
  revision: git("rev-parse", "HEAD"),
  date: git("log", "-1", "--format=%cs"),
  ops: [...read("benchmarks/ops/registry.py").matchAll(/register_op\(OpConfig\(\s*name='([^']+)'/g)].map(
    (m) => m[1],
  ),
  runFlags: [...read("benchmarks/ops/run.py").matchAll(/add_argument\(\s*'(--[a-z-]+)'/g)].map((m) => m[1]),
  modules,
  testFiles: files("tests"),
  workflows: {
    "ascend-a2-benchmark-ci.yml": jobs("ascend-a2-benchmark-ci.yml"),
    "ascend-a2-ci.yml": jobs("ascend-a2-ci.yml"),
  },
};
process.stdout.write(`${JSON.stringify(facts, null, 1)}\n`);
process.stderr.write(
  `flash-linear-attention ${facts.revision.slice(0, 8)} (${facts.date}): ${facts.ops.length} benchmark ops, run.py flags ${facts.runFlags.join(" ")}, ${facts.modules.length} benchmark modules, ${facts.testFiles.length} test files; jobs: ${Object.entries(
    facts.workflows,
  )
    .map(([f, j]) => `${f}: ${Object.keys(j).join(", ")}`)
    .join("; ")}\n`,
);
