import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../src/pipeline/run-profile.js";
import { runCli } from "../helpers/cli.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

/**
 * One checkout, one profile: the simulated Triton workload on $PLAIN kernels in a cache of its own
 * ($CACHE_ROOT). Its command first waits until both runs' commands have started (a file each, at
 * most 20 s), so their kernels are compiled at the same time.
 */
function checkout() {
  const dir = tempDir("kcache-side");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:",
      '  - { name: triton, kind: triton, path: "${CACHE_ROOT}" }',
      `store: { path: ${path.join(dir, "store")} }`,
      "key: { prefix: side }",
      "profiles:",
      "  bench:",
      `    env: { PYTHONPATH: ${SIM}, TRITON_SIM_COMPILE_MS: "40" }`,
      "    commands:",
      "      - name: workload",
      "        run: >-",
      "          touch started-$PLAIN;",
      "          for i in $(seq 200); do [ -e started-3 ] && [ -e started-7 ] && break; sleep 0.1; done;",
      `          python3 ${SIM}/workload.py $PLAIN 0`,
      "",
    ].join("\n"),
  );
  const run = (plain: number, args: string[] = []) =>
    runCli(["run", "--profile", "bench", "--json", ...args], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        PLAIN: String(plain),
        CACHE_ROOT: path.join(dir, `cache-${plain}`),
        GITHUB_REF: "refs/heads/main",
        GITHUB_SHA: "a".repeat(40),
      },
    });
  return { dir, run };
}

describe("kcache runs side by side in one checkout", () => {
  it("each writes a folder of its own and reports its own kernels", async () => {
    const c = checkout();
    const [three, seven] = await Promise.all([c.run(3), c.run(7)]);
    expect(three.code, three.stderr).toBe(0);
    expect(seven.code, seven.stderr).toBe(0);
    const a = JSON.parse(three.stdout) as RunReport;
    const b = JSON.parse(seven.stdout) as RunReport;
    expect(a.kernels).toMatchObject({ status: "available", compiled: 3 });
    expect(b.kernels).toMatchObject({ status: "available", compiled: 7 });
    // One took the documented folder, the other the one beside it, and said so.
    const folders = [a.outDir, b.outDir].sort();
    expect(folders).toEqual([path.join(c.dir, ".kcache", "bench"), path.join(c.dir, ".kcache", "bench@2")]);
    expect(`${three.stderr}${seven.stderr}`).toContain(
      `${path.join(c.dir, ".kcache", "bench")} is in use by another kcache run; this run writes to ${path.join(c.dir, ".kcache", "bench@2")}`,
    );
    for (const r of [a, b]) {
      const written = JSON.parse(
        fs.readFileSync(path.join(r.outDir, "kcache-report.json"), "utf8"),
      ) as RunReport;
      expect(written.kernels.compiled).toBe(r.kernels.compiled);
    }
    // Each let its folder go: a run now takes the documented one again.
    const again = JSON.parse((await c.run(3, ["--no-restore", "--no-save"])).stdout) as RunReport;
    expect(again.outDir).toBe(path.join(c.dir, ".kcache", "bench"));
  });

  it("refuses a second run into a folder named with --out, saying the fix", async () => {
    const c = checkout();
    const out = ["--out", "out", "--no-save"];
    const runs = [c.run(3, out), c.run(7, out)] as const;
    const refused = await Promise.race(runs);
    // The run that holds the folder waits for the other's command, which never starts.
    for (const n of [3, 7]) fs.writeFileSync(path.join(c.dir, `started-${n}`), "");
    const [three, seven] = await Promise.all(runs);
    const ran = refused === three ? seven : three;
    expect(ran.code, ran.stderr).toBe(0);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /--out out: another kcache run \(pid \d+\) is writing to \S+\/out; give each run its own --out, or leave --out out/,
    );
  });
});
