import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT_PLACEHOLDER } from "../../src/kinds/root-placeholder.js";
import { generateInductorCache, readPickle } from "../fixtures/inductor-cache.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const PYTHON3 = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => fs.existsSync(p)) as string;

/**
 * A job's machine as containers often are: an interpreter named `python` only (or a venv's), found
 * on the job's PATH, which also holds a log of every rewrite it ran.
 */
function machine(work: string) {
  const bin = path.join(work, "bin");
  fs.mkdirSync(bin, { recursive: true });
  const log = path.join(work, "python-calls.log");
  fs.writeFileSync(
    path.join(bin, "python"),
    `#!/bin/sh\ncase "$1" in *rewrite.py) echo "$2" >> ${log};; esac\nexec ${PYTHON3} "$@"\n`,
    { mode: 0o755 },
  );
  return {
    bin,
    log,
    calls: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").filter(Boolean) : []),
  };
}

/** kcache.yml; `store` names the store's folder; keys fall back across stacks (one with no Python probed is another). */
function project(work: string, python: string | null, store = "store") {
  fs.writeFileSync(
    path.join(work, "kcache.yml"),
    `caches:\n  - name: inductor\n    kind: inductor\n    path: \${CACHE_ROOT}\nstore:\n  path: ${path.join(work, store)}\nkey:\n  prefix: tc\n  restore-prefixes: [tc-]\n${python ? `stack:\n  python: ${python}\n` : ""}`,
  );
}

const env = (work: string, bin: string, root: string, state: string, sha = "a"): NodeJS.ProcessEnv => ({
  // Only the job's own bin: no python3 anywhere on PATH.
  PATH: bin,
  HOME: work,
  GITHUB_REF: "refs/heads/main",
  GITHUB_SHA: sha.repeat(40),
  CACHE_ROOT: root,
  KCACHE_STATE_DIR: path.join(work, state),
});

describe("torch.compile's pickles rewritten by the interpreter the stack names, or not stored or placed at all", () => {
  it("stack.python names the interpreter: the rewrite runs there, and the entries are warm at a new path", async () => {
    const work = tempDir("rewriter");
    const m = machine(work);
    project(work, "python");
    const a = path.join(work, "a", "inductor");
    const g = generateInductorCache(a);
    const saved = await runCli(["save", "--json"], { env: env(work, m.bin, a, "s1"), cwd: work });
    expect(saved.code, saved.stderr).toBe(0);
    // Both pickles rewritten once, in one rewriter process (the save's batch), not one process each.
    expect(m.calls()).toEqual(["batch"]);
    const b = path.join(work, "b", "longer", "inductor");
    const before = m.calls().length;
    const restored = await runCli(["restore", "--json"], { env: env(work, m.bin, b, "s2", "b"), cwd: work });
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({ entriesRestored: g.saved.length, entriesBad: 0 });
    // Both pickles (the FX graph and the AOTAutograd entry) in one rewriter process, not one each.
    expect(m.calls().slice(before)).toEqual(["batch"]);
    expect(readPickle(path.join(b, g.fxgraph)).directory).toBe(`${b}/triton/0/KEY`);
  });

  it("no interpreter where the stack says: pickles naming the folder are neither saved nor placed, one warning names the fix, --strict exits 3", async () => {
    const work = tempDir("rewriter");
    const m = machine(work);
    // The default stack.python (python3) is not on this job's PATH.
    project(work, null);
    const a = path.join(work, "a", "inductor");
    const g = generateInductorCache(a);
    const pickled = [g.fxgraph, g.aotautograd];
    const saved = await runCli(["save", "--json"], { env: env(work, m.bin, a, "s1"), cwd: work });
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stderr).toMatch(
      /2 entries name their cache folder and could not be stored without it.*no Python interpreter "python3".*set stack\.python in kcache\.yml/,
    );
    const report = JSON.parse(saved.stdout);
    expect(report.skipped.notRelocatable).toBe(2);
    expect(report.entries).toBe(g.saved.length - 2);
    expect(report.faults.map((f: { code: string }) => f.code)).toContain("entry-not-relocatable");
    const strict = await runCli(["save", "--strict=entry-not-relocatable"], {
      env: env(work, m.bin, a, "s1b", "c"),
      cwd: work,
    });
    expect(strict.code, strict.stderr).toBe(3);

    // Saved where the interpreter is named, restored where it is not: every other entry is placed,
    // no pickle is, and nothing placed holds the placeholder.
    project(work, "python", "store2");
    const full = await runCli(["save"], { env: env(work, m.bin, a, "s3", "d"), cwd: work });
    expect(full.code, full.stderr).toBe(0);
    project(work, null, "store2");
    for (const [i, flags] of [[], ["--strict=entry-not-relocatable"]].entries()) {
      const b = path.join(work, `b${i}`, "inductor");
      const restored = await runCli(["restore", "--json", ...flags], {
        env: env(work, m.bin, b, `s4-${i}`, "d"),
        cwd: work,
      });
      expect(restored.code, restored.stderr).toBe(flags.length ? 3 : 0);
      expect(restored.stderr).toMatch(
        /2 entries name their cache folder and could not be relocated.*set stack\.python/,
      );
      if (!flags.length)
        expect(JSON.parse(restored.stdout)).toMatchObject({
          entriesRestored: g.saved.length - 2,
          entriesBad: 2,
        });
      for (const rel of pickled) expect(fs.existsSync(path.join(b, rel))).toBe(false);
      const placed = fs.readdirSync(b, { recursive: true, withFileTypes: true }).filter((d) => d.isFile());
      for (const d of placed)
        expect(fs.readFileSync(path.join(d.parentPath, d.name)).includes(ROOT_PLACEHOLDER)).toBe(false);
    }
  });
});
