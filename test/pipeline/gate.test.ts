import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runSandboxProfile } from "../helpers/profile.js";
import { sandbox } from "../helpers/sandbox.js";

const writeResults = (file: string, n: number, ms = 1.5) =>
  `python3 -c 'import json; json.dump({"results":[{"op":"k","mode":m,"T":t,"median_ms":${ms}} for m in ("fwd","fwdbwd") for t in range(${n})]}, open("${file}","w"))'`;

const coverage = {
  type: "coverage",
  file: "r.json",
  expect: { product: [{ mode: ["fwd", "fwdbwd"] }, { T: [0, 1, 2] }] },
};

describe("kcache run: the save gate", () => {
  it("saves after every command exited 0 and every check passed, with each stage timed", async () => {
    const sb = sandbox();
    // The job compiles: its kernels appear in the cache folder after the restore.
    generateTritonCache(path.join(sb.dir, "compiled"), { entries: 5, totalBytes: 100_000 });
    const { report } = await runSandboxProfile(sb, {
      commands: [
        { name: "bench", run: `sleep 0.2 && ${writeResults("r.json", 3)}` },
        { name: "second", run: "cp -R compiled/. triton/" },
      ],
      checks: [coverage, { type: "finite-positive", file: "r.json", fields: ["median_ms"] }],
    });
    expect(report).toMatchObject({ passed: true, exitCode: 0, firstFailure: null, saveSkipped: null });
    expect(report.save?.outcome).toBe("saved");
    expect(report.stages.map((s) => [s.name, s.status])).toEqual([
      ["restore", "ok"],
      ["bench", "ok"],
      ["second", "ok"],
      ["checks", "ok"],
      ["save", "ok"],
    ]);
    // The bench stage slept 0.2 s, so it cannot have taken less; the stages fit in the run.
    expect(report.stages[1]?.seconds).toBeGreaterThanOrEqual(0.2);
    expect(report.stages.reduce((t, s) => t + s.seconds, 0)).toBeLessThanOrEqual(report.seconds);
  });

  it("keeps a failing command's exit code, stops the rest, still runs the checks, and saves nothing", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 5, totalBytes: 100_000 });
    const { report } = await runSandboxProfile(sb, {
      commands: [
        { name: "bench", run: `${writeResults("r.json", 3)} && exit 3` },
        { name: "later", run: "touch later-ran" },
      ],
      checks: [coverage],
    });
    expect(report).toMatchObject({
      passed: false,
      exitCode: 3,
      firstFailure: "command bench (exit 3)",
      save: null,
    });
    expect(report.saveSkipped).toBe("not saved: command bench (exit 3) failed");
    expect(fs.existsSync(path.join(sb.dir, "later-ran"))).toBe(false);
    expect(report.stages.find((s) => s.name === "later")).toMatchObject({ status: "skipped" });
    expect(report.checks[0]).toMatchObject({ passed: true });
    expect(fs.existsSync(path.join(sb.store, "manifests"))).toBe(false);
    expect(fs.readFileSync(path.join(sb.dir, "out", "logs", "bench.log"), "utf8")).toBe("");
  });

  it("runs later commands after a failure when continue-on-error is set", async () => {
    const sb = sandbox();
    const { report } = await runSandboxProfile(sb, {
      "continue-on-error": true,
      commands: [
        { name: "bad", run: "echo broken >&2; exit 2" },
        { name: "later", run: "touch later-ran" },
      ],
    });
    expect(report.exitCode).toBe(2);
    expect(fs.existsSync(path.join(sb.dir, "later-ran"))).toBe(true);
    expect(fs.readFileSync(path.join(sb.dir, "out", "logs", "bad.log"), "utf8")).toBe("broken\n");
  });

  it("fails with exit 6 and saves nothing when an error check fails", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 5, totalBytes: 100_000 });
    const { report } = await runSandboxProfile(sb, {
      commands: [{ name: "bench", run: writeResults("r.json", 2) }],
      checks: [coverage],
    });
    expect(report).toMatchObject({
      exitCode: 6,
      passed: false,
      firstFailure: "check coverage r.json",
      save: null,
    });
    expect(report.checks[0]?.message).toMatch(
      /missing 2: mode=fwd T=2 \(0 of 1\); mode=fwdbwd T=2 \(0 of 1\)/,
    );
  });

  it("reports a failed warn-severity check but still saves", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "compiled"), { entries: 5, totalBytes: 100_000 });
    const { report, log } = await runSandboxProfile(sb, {
      commands: [{ name: "bench", run: `${writeResults("r.json", 3, 9)} && cp -R compiled/. triton/` }],
      checks: [{ type: "threshold", file: "r.json", field: "median_ms", "<=": 5, severity: "warn" }],
    });
    expect(report).toMatchObject({ exitCode: 0, passed: true });
    expect(report.checks[0]).toMatchObject({ passed: false, severity: "warn" });
    expect(report.save?.outcome).toBe("saved");
    expect(log.warnings.join("\n")).toMatch(/threshold r\.json warns: .*median_ms 9 not <= 5/);
  });

  it("stops a command at its timeout with exit 124", async () => {
    const sb = sandbox();
    const { report } = await runSandboxProfile(sb, {
      commands: [{ name: "hang", run: "sleep 30", timeout: "1s" }],
    });
    expect(report.commands[0]).toMatchObject({ exitCode: 124, timedOut: true });
    expect(report.exitCode).toBe(124);
  });

  it("gives each command of a parallel group its own device, never two at once on one device", async () => {
    const sb = sandbox();
    // Each command claims its device with mkdir (atomic) for a moment; a second claim would fail.
    const claim = (n: string) =>
      `d=$CUDA_VISIBLE_DEVICES; mkdir "claim-$d" && echo "$d $ASCEND_RT_VISIBLE_DEVICES $HIP_VISIBLE_DEVICES" > ${n}.dev && date +%s%N > ${n}.start && sleep 0.3 && date +%s%N > ${n}.end && rmdir "claim-$d"`;
    const { report } = await runSandboxProfile(sb, {
      commands: [
        {
          name: "matrix",
          devices: [4, 5],
          parallel: ["a", "b", "c", "d"].map((n) => ({ name: n, run: claim(n) })),
        },
      ],
    });
    expect(report.exitCode).toBe(0);
    const seen = ["a", "b", "c", "d"].map((n) =>
      fs.readFileSync(path.join(sb.dir, `${n}.dev`), "utf8").trim(),
    );
    for (const s of seen) expect(s).toMatch(/^([45]) \1 \1$/);
    expect(new Set(seen).size).toBe(2);
    // Two devices, four commands: by their own start and end stamps, exactly two ran at once at the most.
    const group = report.stages.find((s) => s.name === "matrix");
    expect(group?.children).toHaveLength(4);
    const stamp = (f: string) => BigInt(fs.readFileSync(path.join(sb.dir, f), "utf8").trim());
    const spans = ["a", "b", "c", "d"].map((n) => [stamp(`${n}.start`), stamp(`${n}.end`)] as const);
    const concurrency = spans.map(([start]) => spans.filter(([s, e]) => s <= start && start < e).length);
    expect(Math.max(...concurrency)).toBe(2);
  });

  it("sets each cache's variable to its path for the commands", async () => {
    const sb = sandbox();
    const { report } = await runSandboxProfile(
      sb,
      { commands: [{ name: "env", run: 'test "$TRITON_CACHE_DIR" = "$EXPECT"' }] },
      {
        env: { EXPECT: path.join(sandbox().dir, "nothing") },
      },
    );
    expect(report.exitCode).toBe(1);
    const sb2 = sandbox();
    const ok = await runSandboxProfile(
      sb2,
      { commands: [{ name: "env", run: 'test "$TRITON_CACHE_DIR" = "$EXPECT"' }] },
      {
        env: { EXPECT: path.join(sb2.dir, "triton") },
      },
    );
    expect(ok.report.exitCode).toBe(0);
  });

  it("lists the store faults it warned of in the report, coded: the run goes on and passes", async () => {
    const sb = sandbox();
    fs.rmSync(sb.store, { recursive: true, force: true });
    fs.writeFileSync(sb.store, "a file where the store folder should be");
    generateTritonCache(path.join(sb.dir, "compiled"), { entries: 2, totalBytes: 20_000 });
    const { report } = await runSandboxProfile(sb, {
      commands: [{ name: "c", run: "cp -R compiled/. triton/" }],
    });
    expect(report.passed).toBe(true);
    expect(report.stages.map((s) => [s.name, s.status])).toEqual([
      ["restore", "warned"],
      ["c", "ok"],
      ["checks", "skipped"],
      ["save", "warned"],
    ]);
    expect(report.faults.map((f) => f.code)).toEqual(["disk-failed", "disk-failed"]);
  });
});
