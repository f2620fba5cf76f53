#!/usr/bin/env node
// Plants known bugs, one at a time, in a temporary copy of the working tree and runs the tests that
// stand for the promise each bug breaks. Every planted bug must make those tests fail: a bug that
// survives is a promise no test keeps. `npm run test:mutants`; CI runs it (.ci/run).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { MUTANTS } from "./mutants-list.mjs";

const ROOT = path.resolve(import.meta.dirname, "..");
const isRoot = process.getuid?.() === 0;

/** The working tree's files (tracked and new, not ignored), copied into a fresh folder. */
function copyTree() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kcache-mutant-"));
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: ROOT })
    .toString()
    .split("\0")
    .filter(Boolean);
  for (const f of files) {
    const from = path.join(ROOT, f);
    if (!fs.existsSync(from) || fs.lstatSync(from).isDirectory()) continue;
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, f));
  }
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

function runTests(dir, tests, testName) {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, "node_modules/vitest/vitest.mjs"),
        "run",
        "--reporter=dot",
        // A planted bug that hangs is caught by the time limit: three minutes here, not the suite's ten
        // (which are for slow machines, not for hangs the mutant run is looking for).
        "--testTimeout=180000",
        "--hookTimeout=180000",
        ...(testName ? ["-t", testName] : []),
        ...tests,
      ],
      { cwd: dir, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true", NO_COLOR: "1" } },
    );
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => resolve({ code, out }));
  });
}

async function one(m) {
  if (m.needsRoot && !isRoot) return { ...m, verdict: "not run (needs root for a tmpfs)" };
  const dir = copyTree();
  try {
    const file = path.join(dir, m.file);
    const text = fs.readFileSync(file, "utf8");
    const at = text.indexOf(m.find);
    if (at < 0 || text.indexOf(m.find, at + 1) >= 0)
      return {
        ...m,
        verdict: `does not apply: the text is not in ${m.file} exactly once; update scripts/mutants.mjs`,
      };
    fs.writeFileSync(file, text.replace(m.find, m.replace));
    for (const extra of m.also ?? []) {
      const f = path.join(dir, extra.file);
      const t = fs.readFileSync(f, "utf8");
      if (t.split(extra.find).length !== 2)
        return {
          ...m,
          verdict: `does not apply: the text is not in ${extra.file} exactly once; update scripts/mutants.mjs`,
        };
      fs.writeFileSync(f, t.replace(extra.find, extra.replace));
    }
    const t0 = Date.now();
    const r = await runTests(dir, m.tests, m.testName);
    const seconds = ((Date.now() - t0) / 1000).toFixed(0);
    // Caught means a test failed on it: a mutant that breaks the build or the setup proves nothing.
    const failed = /Tests\s+\d+ failed/.test(r.out);
    const verdict =
      r.code === 0
        ? `SURVIVED (${seconds} s)`
        : failed
          ? `caught (${seconds} s)`
          : `BROKE THE SETUP (${seconds} s)`;
    return { ...m, verdict, out: r.out };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const only = process.argv.slice(2);
const todo = only.length ? MUTANTS.filter((m) => only.some((o) => m.name.includes(o))) : MUTANTS;
const results = [];
let next = 0;
const workers = Number(process.env.KCACHE_MUTANT_JOBS ?? 2);
await Promise.all(
  Array.from({ length: workers }, async () => {
    while (next < todo.length) {
      const m = todo[next++];
      const r = await one(m);
      process.stdout.write(`${r.verdict.padEnd(24)} ${m.name}\n`);
      results.push(r);
    }
  }),
);
const bad = results.filter((r) => !r.verdict.startsWith("caught") && !r.verdict.startsWith("not run"));
process.stdout.write(
  `\n${results.length - bad.length} of ${results.length} planted bugs caught or not applicable here\n`,
);
for (const r of bad) {
  process.stdout.write(`\n${r.verdict}: ${r.name} (${r.file}; tests ${r.tests.join(" ")})\n`);
  if (r.out) process.stdout.write(`${r.out.split("\n").slice(-15).join("\n")}\n`);
}
process.exitCode = bad.length ? 1 : 0;
