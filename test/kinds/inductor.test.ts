import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { inductorKind } from "../../src/kinds/inductor.js";
import { pickleInterpreter, RelocationError, usePickleInterpreter } from "../../src/kinds/pickle-rewriter.js";
import { detectKind } from "../../src/kinds/registry.js";
import { ROOT_PLACEHOLDER } from "../../src/kinds/root-placeholder.js";
import { localStore } from "../../src/store/local.js";
import { generateInductorCache, readPickle } from "../fixtures/inductor-cache.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";
import { storeContext } from "../helpers/store-context.js";

const files = (root: string) =>
  fs.existsSync(root)
    ? (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
        .filter((d) => d.isFile())
        .map((d) => path.relative(root, path.join(d.parentPath, d.name)))
        .sort()
    : [];

/** A simulated Inductor cache saved from A, A deleted, restored at B (a longer path) on another runner. */
async function movedCache(kind: "inductor" | "triton" = "inductor") {
  const work = tempDir("inductor");
  const a = path.join(work, "a", "torchinductor_root");
  const generated = generateInductorCache(a);
  const store = localStore(path.join(work, "store"));
  const saved = await save(await storeContext(store, a, path.join(work, "s-a"), { kind }));
  const originals = new Map(generated.saved.map((f) => [f, fs.readFileSync(path.join(a, f))]));
  fs.rmSync(path.join(work, "a"), { recursive: true });
  const b = path.join(work, "runner-b", "home", "ci", ".cache", "inductor");
  const ctx = await storeContext(store, b, path.join(work, "s-b"), { kind, revision: "b".repeat(40) });
  const restored = await restore(ctx);
  return { work, a, b, store, ctx, generated, originals, saved, restored };
}

describe("the inductor kind: torch.compile's cache warm at any path", () => {
  it("kind auto recognises an Inductor cache folder", () => {
    const dir = tempDir("inductor");
    generateInductorCache(dir);
    expect(detectKind(dir)).toBe("inductor");
  });

  it("restores every file at the new path, and never a lock, a temp file or an unfinished kernel", async () => {
    const { b, generated, saved, restored } = await movedCache();
    expect(saved.skipped).toMatchObject({ lockFiles: 1, tempDirs: 2, incomplete: 1 });
    expect(restored.entriesRestored).toBe(generated.saved.length);
    expect(files(b).filter((f) => !f.startsWith(".kcache"))).toEqual([...generated.saved].sort());
  });

  it("rewrites the group files for the new folder, and keeps .best_config results where Inductor looks for them", async () => {
    const { b, generated, originals } = await movedCache();
    const groups = generated.saved.filter((f) => path.basename(f).startsWith("__grp__"));
    expect(groups.length).toBeGreaterThan(0);
    for (const g of groups) {
      const { child_paths } = JSON.parse(fs.readFileSync(path.join(b, g), "utf8"));
      for (const p of Object.values(child_paths) as string[]) {
        expect(p.startsWith(`${path.join(b, path.dirname(g))}/`)).toBe(true);
        expect(fs.existsSync(p)).toBe(true);
      }
    }
    for (const f of generated.saved.filter((x) => x.endsWith(".best_config") || x.endsWith(".kernel_perf")))
      expect(fs.readFileSync(path.join(b, f)).equals(originals.get(f) as Buffer)).toBe(true);
    const output = fs.readFileSync(
      path.join(b, "tr/ctrma6wvntogjwn52y4kohuoebgaebhjtkqd4drz5hjus4khpokf.py"),
      "utf8",
    );
    expect(output).toContain(`# kernel path: ${b}/cf/`);
    expect(output).not.toContain("torchinductor_root");
  });

  it("rewrites the pickled FX graph and AOTAutograd entries through Python: they load and name the new folder, binaries untouched", async () => {
    const { a, b, generated } = await movedCache();
    for (const rel of [generated.fxgraph, generated.aotautograd]) {
      const g = readPickle(path.join(b, rel));
      expect(g.source_code).toContain(`# kernel path: ${b}/cf/ccf.py`);
      expect(g.runnable_graph_str).toBe(`os.environ['TORCHINDUCTOR_CACHE_DIR'] = '${b}'`);
      expect(g.directory).toBe(`${b}/triton/0/KEY`);
      expect(JSON.parse(g.group).child_paths["triton_mm.cubin"]).toBe(`${b}/triton/0/KEY/triton_mm.cubin`);
      // The cubin's debug section still names A: a binary is never edited.
      const cubin = readPickle(path.join(b, rel)).cubin;
      expect(cubin).toBe(g.cubin);
      expect(fs.readFileSync(path.join(b, rel)).includes(Buffer.from(`${a}/op/cop.py`))).toBe(true);
    }
  });

  it("stores entries path-free: a save at the new path finds nothing new", async () => {
    const { ctx, restored } = await movedCache();
    // The restore rewrote its pickles for the new folder in one process for the pack, and says so.
    expect(restored.rewriter.processes).toBe(1);
    expect(restored.rewriter.files).toBeGreaterThanOrEqual(2);
    const again = await save(ctx);
    expect(again.outcome).toBe("nothing-new");
    expect(again.entriesReused).toBe(again.entries);
  });

  it("rewrites a save's pickles in one Python process, each once, for hashing and packing alike", async () => {
    const work = tempDir("inductor-batch");
    const a = path.join(work, "torchinductor_root");
    generateInductorCache(a);
    // The interpreter the save is given, counting each process it starts.
    const calls = path.join(work, "calls");
    const python = path.join(work, "python");
    fs.writeFileSync(python, `#!/bin/sh\necho x >> ${calls}\nexec python3 "$@"\n`, { mode: 0o755 });
    const started = () => (fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").split("\n").length - 1 : 0);
    const store = localStore(path.join(work, "store"));
    const context = async (rev: string) => {
      const ctx = await storeContext(store, a, path.join(work, "s"), {
        kind: "inductor",
        revision: rev.repeat(40),
      });
      usePickleInterpreter({ python, source: "test" });
      return ctx;
    };
    const before = pickleInterpreter();
    onTestFinished(() => usePickleInterpreter(before));
    // A save with no parent packs everything: every pickle naming the folder rewritten by one process.
    const first = await save(await context("a"));
    expect(first.rewriter.files).toBeGreaterThanOrEqual(2);
    expect(first.rewriter.processes).toBe(1);
    expect(started()).toBe(1);
    // Pickles touched since are hashed against the parent's: one process again, the same stored form.
    const t = new Date(Date.now() + 5_000);
    for (const f of files(a).filter((f) => /fxgraph|aotautograd/.test(f)))
      fs.utimesSync(path.join(a, f), t, t);
    const again = await save(await context("b"));
    expect(again.outcome).toBe("nothing-new");
    expect(again.rewriter).toEqual({ processes: 1, files: first.rewriter.files });
    expect(started()).toBe(2);
  });

  it("as actions/cache's drop-in (--path, kind auto): detected, relocated, and nothing written outside the cache folder", async () => {
    const work = tempDir("inductor");
    const a = path.join(work, "a", "torchinductor_ci");
    const generated = generateInductorCache(a);
    const store = path.join(work, "store");
    const env = { PATH: process.env.PATH, HOME: path.join(work, "home"), GITHUB_REF: "refs/heads/main" };
    const args = ["--key", "tc", "--store", store, "--revision", "a".repeat(40)];
    const saved = await runCli(["save", "--json", "--path", a, ...args], {
      env: { ...env, KCACHE_STATE_DIR: path.join(work, "s1") },
      cwd: work,
    });
    expect(saved.code, saved.stderr).toBe(0);
    expect(JSON.parse(saved.stdout).caches[0]).toMatchObject({ entries: generated.saved.length });
    fs.rmSync(path.join(work, "a"), { recursive: true });
    const b = path.join(work, "b", "inductor");
    const before = new Set(files(work));
    const restored = await runCli(["restore", "--json", "--path", b, ...args], {
      env: { ...env, KCACHE_STATE_DIR: path.join(work, "s2") },
      cwd: work,
    });
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout).entriesRestored).toBe(generated.saved.length);
    const added = files(work).filter((f) => !before.has(f));
    const outside = added.filter((f) => !f.startsWith("b/inductor/") && !f.startsWith("s2/"));
    expect(outside).toEqual([]);
    expect(readPickle(path.join(b, generated.fxgraph)).directory).toBe(`${b}/triton/0/KEY`);
  });

  it("refuses a damaged or hostile pickle that names the folder (never unpickled, never a crash), and rewrites a sound one", () => {
    const root = "/runner/a/torchinductor";
    const name = "fxgraph/eo/fhash/entry";
    // A BINUNICODE claiming 4 GB, then the folder's path: the rewriter refuses it (exit 3), so the
    // entry is neither stored nor, holding the placeholder, placed.
    const hostile = Buffer.concat([
      Buffer.from([0x80, 0x04, 0x58, 0xff, 0xff, 0xff, 0xff]),
      Buffer.from(root),
    ]);
    expect(() => inductorKind.normalize(root, name, "", hostile)).toThrow(RelocationError);
    expect(() => inductorKind.normalize(root, name, "", hostile)).toThrow(/expected 4294967295 bytes/);
    const stored = Buffer.concat([hostile.subarray(0, 7), Buffer.from(ROOT_PLACEHOLDER)]);
    expect(() => inductorKind.relocate("/b", name, "", stored)).toThrow(RelocationError);
    // One that names nothing is kept as it is, whatever it holds.
    expect(inductorKind.relocate("/b", name, "", hostile).equals(hostile)).toBe(true);
    // A pickle that runs code if unpickled: rewriting it runs nothing (no file appears).
    const marker = path.join(tempDir("inductor"), "ran");
    const evil = execFileSync("python3", [
      "-c",
      `import os, pickle, sys
class E:
    def __reduce__(self):
        return (os.system, ("touch ${marker}",))
sys.stdout.buffer.write(pickle.dumps({"path": "${root}/x.py", "e": E()}, protocol=4))`,
    ]);
    const kept = inductorKind.normalize(root, name, "", evil);
    expect(kept.includes(Buffer.from(root))).toBe(false);
    expect(inductorKind.relocate("/b/cache", name, "", kept).includes(Buffer.from("/b/cache/x.py"))).toBe(
      true,
    );
    expect(fs.existsSync(marker)).toBe(false);
  });
});
