import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { allFetchedAhead } from "../../src/cache/lazy/job-lookups.js";
import { resolveConfig } from "../../src/config/load.js";
import { buildJob } from "../../src/job/build-job.js";
import { silentLog } from "../../src/log.js";
import { compare } from "../../src/pipeline/compare.js";
import { compareHtml } from "../../src/report/compare-html.js";
import { compareMarkdown } from "../../src/report/compare-markdown.js";
import { dumpDom } from "../helpers/chromium.js";
import { runCli } from "../helpers/cli.js";
import { TEST_STACK, tempDir } from "../helpers/sandbox.js";

const SIM = path.resolve(import.meta.dirname, "../../demo/sim");

async function compareSim(env: Record<string, string> = {}, rounds = 2) {
  const dir = tempDir("compare");
  const config = resolveConfig(
    {
      caches: [{ name: "triton", kind: "triton", path: path.join(dir, "unused") }],
      store: { path: path.join(dir, "store") },
      key: { prefix: "cmp" },
      profiles: {
        bench: {
          env: { PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "40", ...env },
          commands: [{ name: "bench", run: `python3 ${SIM}/workload.py 4 2 --json results.json` }],
          compare: { file: "results.json", key: ["op", "mode"], metrics: ["median_ms"], threshold: 0.05 },
        },
      },
    },
    "kcache.yml",
    {},
    dir,
  );
  const env2: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    KCACHE_STATE_DIR: path.join(dir, "state"),
    GITHUB_REF: "refs/heads/main",
  };
  const job = await buildJob({
    config,
    overrides: { profile: "bench", revision: "c".repeat(40) },
    log: silentLog(),
    env: env2,
    cwd: dir,
    stack: TEST_STACK,
  });
  const report = await compare({ job, outDir: path.join(dir, "out"), rounds, echo: null });
  return { dir, report };
}

describe("kcache compare", () => {
  it("says per warm run what its lazy restore fetched (restore: lazy), in the Markdown and on the page", async () => {
    const { report } = await compareSim({}, 1);
    // An eager comparison has no lazy restore to speak of.
    expect(report.runs.every((r) => r.lazy === null)).toBe(true);
    expect(compareMarkdown(report)).not.toContain("Lazy restore");
    expect(compareHtml(report)).not.toContain('<p id="lazy">');
    // The counts a warm run's lazy restore reports (run-profile.ts's LazyReport, as FLA's smoke run had them).
    const warm = report.runs.find((r) => r.kind === "warm") as (typeof report.runs)[number];
    warm.lazy = {
      ...allFetchedAhead(43),
      deferred: 180,
      onDemand: 2,
      neverFetched: 178,
      bytesRead: 51_000,
      waitSeconds: 0.01,
      readWhole: { "mostly-used": { packs: 1, entries: 40, bytes: 6_500_000 } },
    };
    const line =
      "Lazy restore, warm runs: entries fetched ahead 43; fetched when looked up 2; found live 0; never needed 178; bytes read on demand 51.0 kB; lookups waited 0.01 s; packs read whole before the job 1 pack mostly used (6.50 MB).";
    expect(compareMarkdown(report)).toContain(line);
    expect(compareHtml(report)).toContain(`<p id="lazy">${line}</p>`);
  });

  it("alternates cold and warm runs and shows the saving is compilation", async () => {
    const { report } = await compareSim();
    expect(report.runs.map((r) => r.label)).toEqual(["cold-1", "warm-1", "cold-2", "warm-2"]);
    expect(report.summary.kernelsCompiled).toEqual({ cold: [12, 12], warm: [0, 0] });
    expect(report.runs.filter((r) => r.kind === "warm").every((r) => r.kernelsLoaded === 6)).toBe(true);
    expect(report.summary.cold.median).toBeGreaterThan(report.summary.warm.median);
    expect(report.summary.reductionPct).toBeGreaterThan(0);
    expect(report.summary.commands.map((c) => c.name)).toEqual(["bench"]);
    expect(report.summary.saveSeconds.values).toHaveLength(1); // only the seeding cold run saved
    expect(report.records).toMatchObject({ flagged: 0, missing: [], extra: [] });
    expect(report.records?.rows).toHaveLength(6);
    expect(report.records?.range.median_ms).toEqual([0, 0]);
    // Two rounds: each record carries the spread of its rounds (here they agree: no spread).
    expect(report.records?.rows.every((r) => r.spreadPct?.[0] === 0 && r.spreadPct?.[1] === 0)).toBe(true);
    const md = compareMarkdown(report);
    expect(md).toMatch(/Kernels compiled per run: cold 12, 12; warm 0, 0/);
    expect(md).toMatch(
      /None moved more than 5%: the steady-state timings did not change; the saving is compilation/,
    );
  });

  it("flags a record whose timing moved more than the threshold", async () => {
    const { report } = await compareSim({ TRITON_SIM_SLOW_WHEN_WARM: "chunk_fwd_2" }, 1);
    expect(report.records?.flagged).toBe(1);
    const row = report.records?.rows.find((r) => r.flagged);
    expect(row).toMatchObject({ id: "op=chunk_fwd_2 mode=fwd", metric: "median_ms" });
    expect(row?.changePct).toBeCloseTo(50, 5);
    expect(compareMarkdown(report)).toContain("⚠️ op=chunk_fwd_2 mode=fwd median_ms: 1.200 → 1.800 (+50.0%)");
  });

  it("renders an HTML page whose charts a real browser draws (headless Chromium)", async () => {
    const { dir, report } = await compareSim({ TRITON_SIM_SLOW_WHEN_WARM: "chunk_bwd_1" }, 1);
    const file = path.join(dir, "compare.html");
    fs.writeFileSync(file, compareHtml(report));
    const dom = dumpDom(file, dir);
    // Drawn by the page's script: two bars per row (the command and the whole profile), a timeline per run, one bar per record.
    expect(dom.match(/class="bar cold"/g)).toHaveLength(2);
    expect(dom.match(/class="bar warm"/g)).toHaveLength(2);
    expect(dom).toMatch(/data-run="cold-1" data-stage="restore"/);
    expect(dom).toMatch(/data-run="warm-1" data-stage="bench"/);
    expect(dom.match(/class="change (faster|slower)( flagged)?"/g)).toHaveLength(6);
    expect(dom.match(/class="change slower flagged"/g)).toHaveLength(1);
    // Colour says direction, with a legend; labels are whole (never sliced).
    expect(dom).toContain("faster warm than cold");
    expect(dom).toMatch(/<text[^>]*class="record-label"[^>]*>op=chunk_bwd_1 mode=fwdbwd<title>/);
    expect(dom).toMatch(/data-id="op=chunk_bwd_1 mode=fwdbwd" data-change="50.00"/);
    expect(dom).toMatch(/Warm runs took [\d.]+ s against [\d.]+ s cold \(median of 1 each\)/);
    expect(dom).toContain("6 record timings matched on op, mode; 1 moved more than 5%.");
  });
});

describe("kcache diff", () => {
  it("compares two result files record by record, naming missing and extra records", async () => {
    const dir = tempDir("diff");
    const rec = (op: string, mode: string, ms: number) => ({ op, mode, median_ms: ms });
    fs.writeFileSync(
      path.join(dir, "base.json"),
      JSON.stringify({ results: [rec("kda", "fwd", 2), rec("kda", "fwdbwd", 5), rec("gla", "fwd", 1)] }),
    );
    fs.writeFileSync(
      path.join(dir, "head.json"),
      JSON.stringify({ results: [rec("kda", "fwd", 1.9), rec("kda", "fwdbwd", 6), rec("gdn", "fwd", 1)] }),
    );
    const env = { PATH: process.env.PATH, HOME: dir };
    const r = await runCli(["diff", "base.json", "head.json", "--key", "op,mode", "--metric", "median_ms"], {
      env,
      cwd: dir,
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("| op=kda mode=fwd | median_ms | 2.000 | 1.900 | -5.0% |");
    expect(r.stdout).toContain("| ⚠️ op=kda mode=fwdbwd | median_ms | 5.000 | 6.000 | +20.0% |");
    expect(r.stdout).toContain("median_ms: -5.0% .. +20.0%");
    expect(r.stdout).toContain("Only in base.json (1): op=gla mode=fwd");
    expect(r.stdout).toContain("Only in head.json (1): op=gdn mode=fwd");
    const json = JSON.parse(
      (await runCli(["diff", "base.json", "head.json", "--key", "op,mode", "--json"], { env, cwd: dir }))
        .stdout,
    );
    expect(json).toMatchObject({ flagged: 1, missing: ["op=gla mode=fwd"], extra: ["op=gdn mode=fwd"] });
    const bad = await runCli(["diff", "base.json", "nope.json", "--key", "op"], { env, cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/nope\.json: not found/);
    // A typo in a key field would collapse every record into one "(missing)" record: refused.
    const typo = await runCli(["diff", "base.json", "head.json", "--key", "op,mdoe"], { env, cwd: dir });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(
      /--key mdoe: no record in base\.json or head\.json has this field; their records have op, mode, median_ms/,
    );
    const metric = await runCli(["diff", "base.json", "head.json", "--key", "op,mode", "--metric", "p50"], {
      env,
      cwd: dir,
    });
    expect(metric.code).toBe(2);
    expect(metric.stderr).toMatch(/--metric p50: no record/);
    // --fail-on-flag gates on the flagged change (+20%); without it, a flagged change still exits 0.
    const gate = await runCli(["diff", "base.json", "head.json", "--key", "op,mode", "--fail-on-flag"], {
      env,
      cwd: dir,
    });
    expect(gate.code).toBe(6);
    fs.writeFileSync(path.join(dir, "same.json"), fs.readFileSync(path.join(dir, "base.json")));
    const same = await runCli(["diff", "base.json", "same.json", "--key", "op,mode", "--fail-on-flag"], {
      env,
      cwd: dir,
    });
    expect(same.code).toBe(0);
  });
});
