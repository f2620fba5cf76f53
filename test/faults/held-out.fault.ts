import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { project } from "../helpers/project.js";
import { plantHostileRecords } from "../helpers/run-records.js";
import { tempDir } from "../helpers/sandbox.js";
import { Tally } from "./harness.js";

/*
 * What a held-out fault suite found, each injected as it was found: kept answers in the state folder
 * replaced by something else, a Python stack probe that hangs, and run records in the store that are
 * not what kcache writes.
 */

/** Every kept answer in a state folder (a validated kcache.yml, the stack probes). */
function keptAnswers(state: string): string[] {
  return ["config", "python-probe", "accelerator-probe"].flatMap((d) => {
    const dir = path.join(state, d);
    return fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => path.join(dir, f)) : [];
  });
}

/** The same JSON with every string a number and every number a string: the shape kept, the contents not. */
function wrongContents(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(wrongContents);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, wrongContents(x)]));
  if (typeof v === "string") return 7;
  if (typeof v === "number") return "7";
  return v;
}

const REPLACEMENTS: [string, (file: string) => void][] = [
  [
    "the right shape, wrong contents",
    (f) => fs.writeFileSync(f, JSON.stringify(wrongContents(JSON.parse(fs.readFileSync(f, "utf8"))))),
  ],
  ["a FIFO", (f) => execFileSync("mkfifo", [f])],
  ["a link to /dev/zero", (f) => fs.symlinkSync("/dev/zero", f)],
];

describe("kept answers in the state folder", () => {
  it.each(REPLACEMENTS)(
    "replaced by %s: every command asks again and gives the same key",
    async (what, replace) => {
      const tally = new Tally(`kept answers in the state folder replaced by ${what}`);
      const p = project();
      const state = path.join(p.dir, "state");
      const first = await runMeasured(["key", "--json"], { env: p.env, cwd: p.dir });
      tally.run(first);
      expect(first.code, first.stderr).toBe(0);
      const files = keptAnswers(state);
      expect(files.length).toBeGreaterThanOrEqual(2);
      for (const f of files) {
        if (what !== "the right shape, wrong contents") fs.rmSync(f);
        replace(f);
      }
      for (const args of [["key", "--json"], ["save"], ["restore", "--json"]]) {
        const r = await runMeasured(args, { env: p.env, cwd: p.dir });
        tally.run(r);
        tally.row.trials++;
        expect(r.code, `${args[0]}: ${r.stderr}`).toBe(0);
        expect(r.stderr).not.toMatch(/internal error/i);
        expect(r.seconds).toBeLessThan(30);
        if (args[0] === "key") expect(JSON.parse(r.stdout).key).toBe(JSON.parse(first.stdout).key);
      }
      const row = tally.save();
      expect(row.peakRssMb ?? 0).toBeLessThan(200);
    },
  );
});

describe("a Python stack probe that hangs", () => {
  it("gives up after its timeout: a warning without --strict, exit 4 with it; an interpreter that ignores SIGTERM too", async () => {
    const tally = new Tally("Python stack probe hangs (stack.python sleeps)");
    const dir = tempDir("hung-python");
    const sleeps = path.join(dir, "python3");
    fs.writeFileSync(sleeps, "#!/bin/sh\nsleep 120\n", { mode: 0o755 });
    // A wrapper that outlives SIGTERM, waiting on its child: once it held `kcache key` for good.
    const deaf = path.join(dir, "python3-deaf");
    fs.writeFileSync(deaf, '#!/bin/sh\ntrap "" TERM\nsleep 120 &\nwait\n', { mode: 0o755 });
    for (const [python, strict] of [
      [sleeps, false],
      [sleeps, true],
      [deaf, false],
    ] as const) {
      const p = project({
        yml: `caches:\n  - {name: triton, kind: triton, path: "\${CACHE_ROOT}"}\nstack: { python: ${python} }\n`,
      });
      const r = await runMeasured(["key", ...(strict ? ["--strict"] : [])], {
        env: { ...p.env, PYTHONPATH: installedStack(), KCACHE_STATE_DIR: path.join(p.dir, `s-${strict}`) },
        cwd: p.dir,
      });
      tally.run(r);
      tally.row.trials++;
      expect(r.stderr).toMatch(
        /python probe failed \(.*timed out after 30 s\).*only the OS and architecture/,
      );
      expect(r.code).toBe(strict ? 4 : 0);
      expect(r.seconds).toBeLessThan(60);
    }
    tally.save();
  });
});

describe("run records in the store that kcache did not write", () => {
  it("kcache stats skips and counts them: kernels null, compiled 'many', a pull request's record claiming branch/main", async () => {
    const tally = new Tally("run records kcache did not write, read by kcache stats");
    const p = project();
    await plantHostileRecords(p.store);
    const json = await runMeasured(["stats", "--json"], { env: p.env, cwd: p.dir });
    const text = await runMeasured(["stats"], { env: p.env, cwd: p.dir });
    for (const r of [json, text]) {
      tally.run(r);
      tally.row.trials++;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/internal error/i);
    }
    expect(JSON.parse(json.stdout)).toMatchObject({ runs: 1, unreadable: 4 });
    expect(text.stdout).not.toMatch(/many/);
    expect(text.stdout).toMatch(/\| bench \| [^|]+ \| 1 \| 1 \|/);
    // The pull request's record, whatever its body says, is not a default-branch run.
    tally.row.foreignInDefault = JSON.parse(json.stdout).runs - 1;
    expect(tally.save().foreignInDefault).toBe(0);
  });
});
