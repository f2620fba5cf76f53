import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { telemetryEnv } from "../../src/telemetry/hook.js";
import { readTelemetry } from "../../src/telemetry/read.js";
import { tempDir } from "../helpers/sandbox.js";

/** A fake `triton` package: with knobs.compilation.listener (as 3.4+) or without a knobs module (as < 3.4). */
function fakeTriton(withKnobs: boolean): string {
  const root = tempDir("faketriton");
  const pkg = path.join(root, "triton");
  fs.mkdirSync(pkg);
  fs.writeFileSync(path.join(pkg, "__init__.py"), `__version__ = "${withKnobs ? "3.6.0" : "3.2.0"}"\n`);
  if (withKnobs) {
    fs.writeFileSync(
      path.join(pkg, "knobs.py"),
      [
        "class CompileTimes:",
        "    def __init__(self, ir, stages, store):",
        "        self.ir_initialization, self.lowering_stages, self.store_results = ir, stages, store",
        "class compilation_knobs:",
        "    listener = None",
        "compilation = compilation_knobs()",
        "",
      ].join("\n"),
    );
  }
  return root;
}

/** What a Triton job does: load (or compile) kernels through the listener, as compiler.compile does. */
const JOB = `
import sys
import triton
mine = []
try:
    from triton import knobs
except ImportError:
    knobs = None
if knobs:
    # The job sets its own listener after import, as libraries do; kcache's must keep counting.
    knobs.compilation.listener = lambda **kw: mine.append(kw["cache_hit"])
    times = knobs.CompileTimes(2_000_000, [("ttir", 500_000), ("cubin", 1_500_000)], 0)
    for i, hit in enumerate([True, True, False]):
        knobs.compilation.listener(src=None, metadata={"name": f"kernel_{i}"}, metadata_group={}, times=times, cache_hit=hit)
    assert mine == [True, True, False], mine
print("job done")
`;

function runJob(pythonPath: string, file: string, extraEnv: NodeJS.ProcessEnv = {}) {
  const env = telemetryEnv({ PATH: process.env.PATH, PYTHONPATH: pythonPath, ...extraEnv }, file);
  return execFileSync("python3", ["-c", JOB], { env }).toString();
}

/** The simulated Triton with an empty cache, run with kcache's hook writing to a telemetry file. */
function simulatedTriton() {
  const file = path.join(tempDir(), "t.jsonl");
  const sim = path.resolve(import.meta.dirname, "../../demo/sim");
  const cache = tempDir("cache");
  const env = telemetryEnv(
    { PATH: process.env.PATH, PYTHONPATH: sim, TRITON_CACHE_DIR: cache, TRITON_SIM_COMPILE_MS: "1" },
    file,
  );
  return { file, sim, cache, env };
}

describe("the Python telemetry hook", () => {
  it("counts kernels loaded and compiled with compile seconds, and keeps the job's own listener working", () => {
    const file = path.join(tempDir(), "t.jsonl");
    expect(runJob(fakeTriton(true), file)).toBe("job done\n");
    const stats = readTelemetry(file);
    expect(stats).toMatchObject({
      status: "available",
      loaded: 2,
      compiled: 1,
      compiledKernels: ["kernel_2"],
      tritonVersions: ["3.6.0"],
    });
    expect(stats.compileSeconds).toBeCloseTo(4.0, 5);
  });

  it('says "unavailable" for a Triton without knobs (< 3.4), and the job still runs', () => {
    const file = path.join(tempDir(), "t.jsonl");
    expect(runJob(fakeTriton(false), file)).toBe("job done\n");
    expect(readTelemetry(file)).toMatchObject({
      status: "unavailable",
      loaded: 0,
      compiled: 0,
      tritonVersions: ["3.2.0"],
    });
  });

  it('says "no-triton" when no process imported Triton', () => {
    const file = path.join(tempDir(), "t.jsonl");
    execFileSync("python3", ["-c", "print(1)"], { env: telemetryEnv({ PATH: process.env.PATH }, file) });
    expect(readTelemetry(file).status).toBe("no-triton");
  });

  it("still runs the sitecustomize the job already had", () => {
    const file = path.join(tempDir(), "t.jsonl");
    const own = tempDir("own-site");
    const marker = path.join(own, "ran");
    fs.writeFileSync(
      path.join(own, "sitecustomize.py"),
      `open(${JSON.stringify(marker)}, "w").write("yes")\n`,
    );
    runJob(`${fakeTriton(true)}${path.delimiter}${own}`, file);
    expect(fs.readFileSync(marker, "utf8")).toBe("yes");
    expect(readTelemetry(file).loaded).toBe(2);
  });

  it("counts the simulated Triton's kernels through kcache run's environment", () => {
    const { file, sim, env } = simulatedTriton();
    execFileSync("python3", [path.join(sim, "workload.py"), "3", "1"], { env });
    const cold = readTelemetry(file);
    fs.rmSync(file);
    execFileSync("python3", [path.join(sim, "workload.py"), "3", "1"], { env });
    const warm = readTelemetry(file);
    expect(cold.compiled).toBe(7);
    expect(warm).toMatchObject({ status: "available", compiled: 0, loaded: 4 });
  });

  it("records every cache entry folder a warm job's lookups found (kernels, launchers, autotune results), and says when it saw all", () => {
    const { file, sim, cache, env } = simulatedTriton();
    execFileSync("python3", [path.join(sim, "workload.py"), "3", "1"], { env });
    fs.rmSync(file);
    execFileSync("python3", [path.join(sim, "workload.py"), "3", "1"], { env });
    const warm = readTelemetry(file);
    const entries = fs
      .readdirSync(cache, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => path.join(cache, d.name));
    expect(warm.usageComplete).toBe(true);
    const holds = (d: string, re: RegExp) => fs.readdirSync(d).some((f) => re.test(f));
    const launchers = entries.filter((d) => holds(d, /\.so$/));
    const tunings = entries.filter((d) => holds(d, /\.autotune\.json$/));
    expect(launchers.length).toBeGreaterThan(0);
    expect(tunings.length).toBeGreaterThan(0);
    // Launchers and autotune results are looked up too; of the kernels, exactly those loaded (the
    // autotuned configs that lost are not: a warm run compiles only the best one).
    const used = new Set(warm.usedFolders);
    expect(warm.usedFolders.every((d) => entries.includes(d))).toBe(true);
    expect([...launchers, ...tunings].every((d) => used.has(d))).toBe(true);
    const kernels = entries.filter((d) => holds(d, /^__grp__/));
    expect(kernels.filter((d) => used.has(d)).length).toBe(warm.loaded);
    expect(warm.loaded).toBeLessThan(kernels.length);
    // A job that uses fewer kernels is seen using fewer entries.
    fs.rmSync(file);
    execFileSync("python3", [path.join(sim, "workload.py"), "1", "0"], { env });
    const fewer = readTelemetry(file);
    expect(fewer.usedFolders.length).toBeGreaterThan(0);
    expect(fewer.usedFolders.length).toBeLessThan(entries.length);
  });

  it("records every entry folder the job's processes wrote (kernels, launchers, autotune results), and none it only loaded", () => {
    const { file, sim, cache, env } = simulatedTriton();
    execFileSync("python3", [path.join(sim, "workload.py"), "3", "1"], { env });
    const cold = readTelemetry(file);
    const entries = fs
      .readdirSync(cache, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith("tmp."))
      .map((d) => path.join(cache, d.name))
      .sort();
    expect([...cold.wroteFolders].sort()).toEqual(entries);
    fs.rmSync(file);
    execFileSync("python3", [path.join(sim, "workload.py"), "3", "1", "--prefix", "other"], { env });
    const second = readTelemetry(file);
    expect(second.wroteFolders.length).toBeGreaterThan(0);
    expect(second.wroteFolders.some((d) => entries.includes(d))).toBe(false);
  });

  it("records each file the job's processes wrote with the sha256 of its bytes: every file of every entry, as it lies on disk", () => {
    const { file, sim, cache, env } = simulatedTriton();
    const t0 = Date.now() / 1000;
    execFileSync("python3", [path.join(sim, "workload.py"), "3", "1"], { env });
    const { wroteFiles } = readTelemetry(file);
    const onDisk = fs
      .readdirSync(cache, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith("tmp."))
      .flatMap((d) => fs.readdirSync(path.join(cache, d.name)).map((f) => [path.join(cache, d.name), f]))
      .map(([folder, f]) => {
        const sha256 = createHash("sha256")
          .update(fs.readFileSync(path.join(folder as string, f as string)))
          .digest("hex");
        return `${folder}/${f} ${sha256}`;
      })
      .sort();
    // Group files (text, written through put_group), stage files (text and bytes), launchers, autotune results.
    expect(onDisk.some((l) => /__grp__/.test(l)) && onDisk.some((l) => /\.autotune\.json /.test(l))).toBe(
      true,
    );
    expect(wroteFiles.map((w) => `${w.folder}/${w.file} ${w.sha256}`).sort()).toEqual(onDisk);
    for (const w of wroteFiles) expect(w.t).toBeGreaterThanOrEqual(t0 - 1);
  });

  it("a telemetry file that is not a regular file, or is larger than kcache reads, reads as no telemetry (never a hang)", () => {
    const dir = tempDir();
    const fifo = path.join(dir, "fifo.jsonl");
    execFileSync("mkfifo", [fifo]);
    expect(readTelemetry(fifo)).toMatchObject({ status: "no-triton", wroteFiles: [] });
    const link = path.join(dir, "link.jsonl");
    fs.symlinkSync("/dev/zero", link);
    expect(readTelemetry(link)).toMatchObject({ status: "no-triton", wroteFiles: [] });
  });

  it("a Triton without the cache manager module leaves use incomplete: the save then trusts access times only", () => {
    const file = path.join(tempDir(), "t.jsonl");
    runJob(fakeTriton(true), file);
    expect(readTelemetry(file)).toMatchObject({ usageComplete: false, usedFolders: [] });
  });
});
