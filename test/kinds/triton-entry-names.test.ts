import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { makeFakeAscend } from "../../demo/sim/ascend-toolkit.js";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { runSimWorkload } from "../helpers/python-sim.js";
import { sandbox } from "../helpers/sandbox.js";

const cacheAt = (sb: ReturnType<typeof sandbox>, p: string) =>
  sb.config({
    caches: [{ name: "triton", kind: "triton", path: p }],
    store: { path: sb.store },
    key: { prefix: "ascend-bench" },
  });

const filesNamed = (root: string, re: RegExp): string[] =>
  fs
    .readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((f) => re.test(path.basename(f)))
    .sort();

describe.each(["3.2", "3.5"] as const)("a simulated Triton-Ascend %s cache", (line) => {
  it("restores at another path with every kernel, launcher and npu_utils loaded, after the headers were reinstalled", async () => {
    const sb = sandbox();
    const ascend = makeFakeAscend(path.join(sb.dir, "Ascend"));
    const sim = { ascend: { line, ascendHome: ascend.toolkit } };
    const a = path.join(sb.dir, "runner-a", "triton");
    const cold = runSimWorkload(a, sim);
    expect(cold.compiled).toBeGreaterThan(0);
    // What Triton-Ascend leaves: NPU stage files, npu_utils.so, launchers, the header pair and its lock.
    expect(filesNamed(a, /\.npubin$/).length).toBeGreaterThan(0);
    expect(filesNamed(a, /^launcher_cxx11abi1\..*\.so$/).length).toBe(3);
    expect(filesNamed(a, /^npu_utils\.so$/)).toHaveLength(1);
    expect(filesNamed(a, /^precompiled\.h(\.gch)?$/)).toHaveLength(2);
    expect(fs.readdirSync(a).filter((f) => f.endsWith(".lock"))).toHaveLength(1);

    const saved = await save(await sb.context({ config: cacheAt(sb, a) }));
    expect(saved.outcome).toBe("saved");
    expect(saved.skipped.localFiles).toBe(1); // the .gch stays behind
    expect(saved.skipped.lockFiles).toBe(1);

    // Another runner: another path, and a fresh install of the toolkit's headers (new mtimes).
    ascend.reinstallHeaders();
    const b = path.join(sb.dir, "runner-b", "work", "triton");
    const r = await restore(
      await sb.context({ config: cacheAt(sb, b), stateDir: path.join(sb.dir, "state-b") }),
    );
    expect(r.cacheHit).toBe(true);
    expect(filesNamed(b, /\.gch$/)).toEqual([]);
    const warm = runSimWorkload(b, sim);
    expect(warm.compiled).toBe(0);
    expect(warm.loaded).toBe(cold.compiled + cold.loaded - 4 * 2 + 2 * 0); // plain + best configs
    // Triton-Ascend rebuilt the precompiled header from the restored precompiled.h, against these headers.
    expect(filesNamed(b, /^precompiled\.h\.gch$/)).toHaveLength(1);
  });

  it("a byte-for-byte copy with the .gch (what tar does) breaks every launcher build once the headers are reinstalled", () => {
    const sb = sandbox();
    const ascend = makeFakeAscend(path.join(sb.dir, "Ascend"));
    const sim = { ascend: { line, ascendHome: ascend.toolkit } };
    const a = path.join(sb.dir, "runner-a", "triton");
    runSimWorkload(a, sim);
    // Launchers are found by name before the header is used; a new one must be built to hit the .gch.
    for (const f of filesNamed(a, /^launcher_cxx11abi/)) fs.rmSync(path.join(a, f));
    fs.cpSync(a, path.join(sb.dir, "copy"), { recursive: true, preserveTimestamps: true });
    ascend.reinstallHeaders();
    expect(() => runSimWorkload(path.join(sb.dir, "copy"), sim)).toThrow(
      /has been modified since the precompiled header/,
    );
  });
});

describe("Triton <= 3.2 entry names", () => {
  it("restores entries whose urlsafe-base64 names start with '-' or '_'", async () => {
    const sb = sandbox();
    const a = path.join(sb.dir, "a");
    for (const name of [
      "-abcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
      "_bcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
    ]) {
      fs.mkdirSync(path.join(a, name), { recursive: true });
      fs.writeFileSync(path.join(a, name, "k.so"), "launcher");
      // An interrupted Triton 3.2 put leaves its temp file beside the real one: never saved.
      fs.writeFileSync(path.join(a, name, "k.so.tmp.pid_123_0a1b"), "partial");
    }
    const saved = await save(await sb.context({ config: cacheAt(sb, a) }));
    expect(saved.entries).toBe(2);
    expect(saved.skipped.tempDirs).toBe(2);
    const b = path.join(sb.dir, "b");
    const r = await restore(await sb.context({ config: cacheAt(sb, b), stateDir: path.join(sb.dir, "s") }));
    expect(r.entriesRestored).toBe(2);
    expect(filesNamed(b, /\.so/)).toEqual([
      "-abcdefghijklmnopqrstuvwxyz0123456789ABCDEF/k.so",
      "_bcdefghijklmnopqrstuvwxyz0123456789ABCDEF/k.so",
    ]);
  });
});
