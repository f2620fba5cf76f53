import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CRAFTED, craft } from "../fixtures/inductor-crafted.js";
import { installedStack } from "../fixtures/installed-stack.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { tempDir } from "../helpers/sandbox.js";
import { filesOutside, Tally } from "./harness.js";

/**
 * torch.compile's entries relocated exactly or not at all: crafted entries (many paths restored
 * under a longer folder, a 64 MB pickle, a module that is not UTF-8, sibling folders, the placeholder
 * as content) saved at one folder and restored at a longer one must be placed byte for byte as they
 * would have been written there; where no interpreter can rewrite them, or a pickle is damaged,
 * they are neither saved nor placed (a warning, exit 3 under --strict). Never an entry that still
 * holds the placeholder or names another job's folder. The rewriter runs in the interpreter the
 * stack names; here a wrapper of python3 that records each rewrite's peak memory.
 */
const PYTHON3 = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => fs.existsSync(p)) as string;
/** The rewriter's stated bound (docs/inductor.md): three times the entry's size plus 32 MB. */
const rewriterBoundMb = (entryMb: number) => 3 * entryMb + 32;

function setup(name: string) {
  const dir = tempDir(`kcache-ind-${name}`);
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin);
  // The harness starts kcache through bash; nothing else of /usr/bin (no python3) is on the job's PATH.
  fs.symlinkSync("/bin/bash", path.join(bin, "bash"));
  fs.mkdirSync(path.join(dir, "bash-only"));
  fs.symlinkSync("/bin/bash", path.join(dir, "bash-only", "bash"));
  const rss = path.join(dir, "rewrites.log");
  fs.writeFileSync(
    path.join(bin, "python"),
    `#!${PYTHON3}
import resource, subprocess, sys
r = subprocess.run([${JSON.stringify(PYTHON3)}] + sys.argv[1:])
if len(sys.argv) > 2 and sys.argv[1].endswith("rewrite.py"):
    with open(${JSON.stringify(rss)}, "a") as f:
        f.write("%s %d\\n" % (sys.argv[2], resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(r.returncode)
`,
    { mode: 0o755 },
  );
  /** kcache.yml; `acrossStacks`: a restore may take another stack's key (one probed with no Python is another). */
  const yml = (python: string | null, acrossStacks = false) =>
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      `caches:\n  - name: inductor\n    kind: inductor\n    path: \${CACHE_ROOT}\nstore:\n  path: ${path.join(dir, "store")}\nkey:\n  prefix: crafted\n${acrossStacks ? "  restore-prefixes: [crafted-]\n" : ""}${python ? `stack:\n  python: ${python}\n` : ""}`,
    );
  const env = (root: string, state: string, sha: string, withPython = true): NodeJS.ProcessEnv => ({
    // The job's PATH: the wrapper named `python`, no python3 (absent unless the stack names it).
    PATH: withPython ? bin : path.join(dir, "bash-only"),
    PYTHONPATH: installedStack(),
    HOME: dir,
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: sha.repeat(40),
    CACHE_ROOT: root,
    KCACHE_STATE_DIR: path.join(dir, state),
  });
  const rewrites = () =>
    fs.existsSync(rss)
      ? fs
          .readFileSync(rss, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((l) => Number(l.split(" ")[1]) / 1024)
      : [];
  return { dir, yml, env, rewrites };
}

/** Files under `root` (relative), each with its bytes. */
function tree(root: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (!fs.existsSync(root)) return out;
  for (const d of fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    if (d.isFile()) {
      const p = path.join(d.parentPath, d.name);
      out.set(path.relative(root, p), fs.readFileSync(p));
    }
  return out;
}

/** Whether two pickles (of the fixtures' plain values) hold the same values. */
function samePickle(x: string, y: string): boolean {
  const same = execFileSync(PYTHON3, [
    "-c",
    "import pickle, sys; print(pickle.load(open(sys.argv[1], 'rb')) == pickle.load(open(sys.argv[2], 'rb')))",
    x,
    y,
  ]);
  return same.toString().trim() === "True";
}

describe("Inductor entries crafted against relocation: placed exactly, or not at all", () => {
  it.each(CRAFTED)(
    "Inductor: %s, saved at one folder and restored at a longer one, plain and --strict",
    async (kind) => {
      const s = setup(kind);
      s.yml("python");
      const a = path.join(s.dir, "a", "inductor");
      craft(a, a, a, kind);
      const tally = new Tally(
        `Inductor: crafted entries (${kind}) saved at one folder, restored at a longer one`,
      );
      const saved = await runMeasured(["save", "--json"], {
        env: s.env(a, "s0", "a"),
        cwd: s.dir,
        timeoutMs: 240_000,
      });
      tally.run(saved);
      expect(saved.code, saved.stderr).toBe(0);
      const entries = (JSON.parse(saved.stdout) as { entries: number }).entries;
      for (const [i, strict] of [false, true].entries()) {
        const b = path.join(s.dir, `b${i}`, "home", "runner", "work", "_cache", "torch", "inductor");
        const restored = await runMeasured(["restore", "--json", ...(strict ? ["--strict"] : [])], {
          env: s.env(b, `s${i + 1}`, "a"),
          cwd: s.dir,
          timeoutMs: 240_000,
        });
        tally.run(restored);
        tally.row.trials++;
        expect(restored.code, restored.stderr).toBe(0);
        expect(JSON.parse(restored.stdout)).toMatchObject({ entriesRestored: entries, entriesBad: 0 });
        // What a job at b would have written itself, byte for byte.
        const want = path.join(s.dir, `want${i}`);
        craft(want, b, a, kind);
        const placed = tree(b);
        const expected = tree(want);
        let differs = 0;
        for (const [rel, data] of expected) {
          const got = placed.get(rel);
          if (!got) differs++;
          // A pickle's framing follows its strings' lengths: the same values, not the same bytes.
          else if (
            rel.startsWith("fxgraph/")
              ? !samePickle(path.join(b, rel), path.join(want, rel))
              : !got.equals(data)
          )
            differs++;
        }
        // An entry that still held the placeholder, or named a, would differ.
        if (differs) tally.row.corruptRestores++;
        if (!differs) fs.rmSync(want, { recursive: true, force: true });
        expect(differs).toBe(0);
      }
      tally.row.writesOutside = filesOutside(s.dir, [
        "kcache.yml",
        "bin",
        "bash-only",
        "rewrites.log",
        "a",
        "store",
      ]).filter((f) => !/^(b\d|s\d)\//.test(f)).length;
      const row = tally.save();
      expect(row).toMatchObject({ corruptRestores: 0, writesOutside: 0 });
      // The rewriter's memory, every run: bounded by the entry's size.
      const entryMb = Math.max(...[...tree(a).values()].map((d) => d.length)) / 1024 / 1024;
      const peaks = s.rewrites();
      expect(peaks.length).toBeGreaterThan(0);
      expect(Math.max(...peaks)).toBeLessThan(rewriterBoundMb(entryMb));
      if (kind === "huge") {
        expect(entryMb).toBeGreaterThan(60);
        console.log(
          `64 MB pickle: rewriter peak ${Math.max(...peaks).toFixed(0)} MB (bound ${rewriterBoundMb(entryMb).toFixed(0)} MB)`,
        );
      }
    },
  );
});

describe("Inductor entries that cannot be relocated: neither saved nor placed", () => {
  it("Inductor: no interpreter where the stack says, at save and at restore, plain and --strict", async () => {
    const s = setup("nopython");
    const a = path.join(s.dir, "a", "inductor");
    craft(a, a, a, "sibling-folders");
    const tally = new Tally("Inductor: no Python where stack.python says, at save and at restore");
    const strict = "--strict=entry-not-relocatable";
    // A key saved where the interpreter is named, restored where there is none (another stack's key,
    // reached by the restore prefix): the module is placed, the pickle is not.
    s.yml("python", true);
    const saved = await runMeasured(["save"], { env: s.env(a, "s0", "a"), cwd: s.dir });
    tally.run(saved);
    expect(saved.code, saved.stderr).toBe(0);
    s.yml(null, true);
    for (const [i, flags] of [[], [strict]].entries()) {
      const b = path.join(s.dir, `b${i}`, "longer", "inductor");
      const r = await runMeasured(["restore", "--json", ...flags], {
        env: s.env(b, `s${i + 1}`, "a", false),
        cwd: s.dir,
      });
      tally.run(r);
      tally.row.trials++;
      expect(r.code, r.stderr).toBe(flags.length ? 3 : 0);
      expect(r.stderr).toMatch(/1 entries name their cache folder and could not be relocated.*stack\.python/);
      const placed = tree(b);
      const want = path.join(s.dir, `want${i}`);
      const rels = craft(want, b, a, "sibling-folders");
      const pickle = rels.find((r) => r.startsWith("fxgraph/")) as string;
      const module = rels.find((r) => r.endsWith(".py")) as string;
      const wrong =
        placed.has(pickle) ||
        !placed.get(module)?.equals(fs.readFileSync(path.join(want, module))) ||
        [...placed.values()].some((d) => d.includes("@@KCACHE_INDUCTOR_CACHE_ROOT@@"));
      if (wrong) tally.row.corruptRestores++;
      expect(wrong).toBe(false);
    }
    // Saved where there is none: the pickle is left out of the key, said once; --strict exits 3.
    for (const [i, flags] of [[], [strict]].entries()) {
      const r = await runMeasured(["save", "--json", ...flags], {
        env: s.env(a, `t${i}`, String(i + 2), false),
        cwd: s.dir,
      });
      tally.run(r);
      tally.row.trials++;
      expect(r.code, r.stderr).toBe(flags.length ? 3 : 0);
      expect(r.stderr).toMatch(
        /1 entries name their cache folder and could not be stored without it.*no Python interpreter "python3"/,
      );
      if (!flags.length) expect(JSON.parse(r.stdout).skipped.notRelocatable).toBe(1);
    }
    const row = tally.save();
    expect(row).toMatchObject({ corruptRestores: 0 });
  });

  it("Inductor: a damaged pickle that names the folder is not saved (a warning, exit 3 under --strict)", async () => {
    const s = setup("damaged");
    s.yml("python");
    const a = path.join(s.dir, "a", "inductor");
    const rels = craft(a, a, a, "sibling-folders");
    const pickle = rels.find((r) => r.startsWith("fxgraph/")) as string;
    // Cut mid-stream: the folder's path is in what is left, the rest of the pickle is not.
    const whole = fs.readFileSync(path.join(a, pickle));
    fs.writeFileSync(path.join(a, pickle), whole.subarray(0, Math.floor(whole.length * 0.6)));
    const tally = new Tally("Inductor: a damaged pickle that names the folder");
    for (const [i, flags] of [[], ["--strict"]].entries()) {
      const r = await runMeasured(["save", "--json", ...flags], {
        env: s.env(a, `s${i}`, String(i + 1)),
        cwd: s.dir,
      });
      tally.run(r);
      tally.row.trials++;
      expect(r.code, r.stderr).toBe(flags.length ? 3 : 0);
      expect(r.stderr).toMatch(
        /1 entries name their cache folder and could not be stored without it.*not a pickle kcache can rewrite/,
      );
      if (!flags.length) expect(JSON.parse(r.stdout)).toMatchObject({ entries: rels.length - 1 });
    }
    // What was saved restores whole at a longer folder, the damaged pickle absent.
    const b = path.join(s.dir, "b", "longer", "inductor");
    const r = await runMeasured(["restore", "--json"], { env: s.env(b, "r", "1"), cwd: s.dir });
    tally.run(r);
    tally.row.trials++;
    expect(r.code, r.stderr).toBe(0);
    const placed = tree(b);
    if (placed.has(pickle) || [...placed.values()].some((d) => d.includes("@@KCACHE_INDUCTOR_CACHE_ROOT@@")))
      tally.row.corruptRestores++;
    const row = tally.save();
    expect(row).toMatchObject({ corruptRestores: 0 });
  });
});
