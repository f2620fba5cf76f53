import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { WeekStats } from "../../src/history/stats.js";
import { isoWeek } from "../../src/history/stats.js";
import { statsHtml } from "../../src/report/stats-html.js";
import { dumpDom } from "../helpers/chromium.js";
import { runCli } from "../helpers/cli.js";
import { SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

/** A project whose profile runs the simulated Triton workload and compares its result records. */
function project() {
  const dir = tempDir("kcache-stats");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:",
      "  - name: triton",
      "    kind: triton",
      "    path: ${CACHE_ROOT}",
      `store:\n  path: ${path.join(dir, "store")}`,
      "key:\n  prefix: sim-bench",
      "profiles:",
      "  bench:",
      "    env:",
      `      PYTHONPATH: ${SIM}`,
      '      TRITON_SIM_COMPILE_MS: "20"',
      "    commands:",
      "      - name: workload",
      `        run: python3 ${SIM}/workload.py 3 1 --json r.json`,
      "    compare:",
      "      file: r.json",
      "      key: [op, mode]",
      "",
    ].join("\n"),
  );
  const env = (runner: string, ref = "refs/heads/main"): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: dir,
    CACHE_ROOT: path.join(dir, runner, "triton"),
    KCACHE_STATE_DIR: path.join(dir, runner, "state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: ref,
    GITHUB_EVENT_NAME: ref.startsWith("refs/pull/") ? "pull_request" : "push",
    GITHUB_SHA: "c".repeat(40),
  });
  return { dir, env };
}

describe("run records and kcache stats", () => {
  it("records each run beside the caches and sums the default branch's runs per week; pull requests never count", async () => {
    const p = project();
    const run = async (runner: string, ref?: string) => {
      const r = await runCli(["run", "--profile", "bench"], { env: p.env(runner, ref), cwd: p.dir });
      expect(r.code, r.stderr).toBe(0);
    };
    await run("cold");
    for (const w of ["warm-1", "warm-2", "warm-3"]) await run(w);
    await run("pr-1", "refs/pull/7/merge");
    await run("pr-2", "refs/pull/7/merge");

    const runs = fs
      .readdirSync(path.join(p.dir, "store", "runs"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".json"));
    expect(runs).toHaveLength(6);
    const one = JSON.parse(fs.readFileSync(path.join(p.dir, "store", "runs", runs[0] as string), "utf8"));
    expect(one).toMatchObject({ schema: "kcache-run-record/1", profile: "bench", prefix: "sim-bench" });
    expect(one.records.map((r: { id: string }) => r.id)).toContain("op=chunk_fwd_0 mode=fwd");

    const stats = JSON.parse((await runCli(["stats", "--json"], { env: p.env("any"), cwd: p.dir })).stdout);
    expect(stats).toMatchObject({ scope: "branch/main", runs: 4 });
    const [week] = stats.weeks;
    expect(week).toMatchObject({
      prefix: "sim-bench",
      week: isoWeek(new Date().toISOString()),
      runs: 4,
      passed: 4,
    });
    expect(week.hits).toEqual({ exact: 3, prefix: 0, miss: 1 });
    expect(week.hitRate).toBe(0.75);
    expect(week.kernelsCompiled).toBe(7); // the cold run's, and none after
    expect(week.compileSecondsCold).toBeGreaterThan(week.compileSecondsWarm);
    expect(week.secondsSavedEstimate).toBeGreaterThan(0);
    expect(week.restoreSeconds.p50).toBeGreaterThanOrEqual(0);

    const all = JSON.parse(
      (await runCli(["stats", "--json", "--all-scopes"], { env: p.env("any"), cwd: p.dir })).stdout,
    );
    expect(all.runs).toBe(6);
    const text = await runCli(["stats"], { env: p.env("any"), cwd: p.dir });
    expect(text.stdout).toMatch(/\| sim-bench \| \d{4}-W\d\d \| 4 \| 4 \| 3 \/ 0 \/ 1 \| 75% \| 7 \|/);

    // The HTML page, drawn by a real browser: per week a hit-rate bar and cold and warm compile bars.
    const html = path.join(p.dir, "stats.html");
    expect((await runCli(["stats", "--html", html], { env: p.env("any"), cwd: p.dir })).code).toBe(0);
    const dom = dumpDom(html, p.dir);
    expect(dom.match(/<rect class="hit"/g)).toHaveLength(1);
    expect(dom).toMatch(/<rect class="hit"[^>]*data-value="0\.750"/);
    expect(dom.match(/<rect class="(cold|warm)"/g)).toHaveLength(2);
    expect(dom).toContain("<td>sim-bench</td>");
    // Every bar says its value, both axes are labelled, and sizes read in their own unit.
    expect(dom).toMatch(/<text class="value"[^>]*>75%<\/text>/);
    expect(dom.match(/<text class="value"[^>]*>[\d.]+ s<\/text>/g)).toHaveLength(2);
    expect(dom).toMatch(/<text class="tick"[^>]*>100%<\/text>/);
    expect(dom).toMatch(/<text class="tick"[^>]*>0 s<\/text>/);
    expect(dom).toMatch(/The store holds \d+(\.\d+)? (B|kB|MB) for sim-bench/);
    expect(dom).not.toMatch(/0\.0 MB/);
    expect(dom).toContain("hit rate (left axis)");

    // prune --older-than ages run records out with the keys.
    for (const f of runs.slice(0, 2)) {
      const old = new Date(Date.now() - 40 * 86400_000);
      fs.utimesSync(path.join(p.dir, "store", "runs", f), old, old);
    }
    const pruned = JSON.parse(
      (await runCli(["prune", "--older-than", "30d", "--json"], { env: p.env("any"), cwd: p.dir })).stdout,
    );
    expect(pruned.runRecordsDeleted).toBe(2);
  });

  it("numbers weeks as ISO 8601 does (a new year's first days can belong to the last week of the old one)", () => {
    expect(isoWeek("2026-12-01T10:00:00Z")).toBe("2026-W49");
    expect(isoWeek("2027-01-01T10:00:00Z")).toBe("2026-W53");
    expect(isoWeek("2027-01-04T10:00:00Z")).toBe("2027-W01");
  });
});

describe("the stats page's legend", () => {
  it("lists only the series some week has a value for", () => {
    const week = {
      prefix: "p",
      week: "2026-W49",
      runs: 2,
      hits: { exact: 1, prefix: 0, miss: 1 },
      hitRate: 0.5,
      kernelsCompiled: 3,
      compileSecondsCold: null,
      compileSecondsWarm: null,
      secondsSavedEstimate: null,
      restoreSeconds: null,
      saveSeconds: null,
    } as unknown as WeekStats;
    const page = statsHtml({
      store: "local store /s",
      scope: "branch/main",
      runs: 2,
      weeks: [week],
      storeBytes: { p: 105 },
    });
    expect(page).toContain("hit rate (left axis)");
    expect(page).not.toContain("runs that missed");
    expect(page).not.toContain("exact hits (right axis)");
    expect(page).toContain("The store holds 105 B for p.");
  });
});

describe("the stats page's lazy table", () => {
  const week = (prefix: string, lazy: WeekStats["lazy"]) =>
    ({
      prefix,
      week: "2026-W49",
      runs: 2,
      hits: { exact: 2, prefix: 0, miss: 0 },
      hitRate: 1,
      kernelsCompiled: 0,
      compileSecondsCold: null,
      compileSecondsWarm: null,
      secondsSavedEstimate: null,
      restoreSeconds: null,
      saveSeconds: null,
      lazy,
    }) as unknown as WeekStats;
  const page = (weeks: WeekStats[]) =>
    statsHtml({ store: "local store /s", scope: "branch/main", runs: 2, weeks, storeBytes: {} });

  it("shows what lazy restores and live sharing fetched, per prefix and week, and nothing for weeks without them", () => {
    const lazy = {
      runs: 2,
      prefetched: 86,
      onDemand: 7,
      live: 3,
      neverFetched: 353,
      bytesRead: 2_000_000,
      waitSeconds: 0.25,
      readWhole: { "no-frames": { packs: 2, entries: 40, bytes: 4_460_000 } },
    };
    const html = page([week("fla-bench", lazy), week("fla-tests", null)]);
    const table = html.slice(
      html.indexOf('<table id="lazy">'),
      html.indexOf("</table>", html.indexOf('<table id="lazy">')),
    );
    expect(table).toContain("<th>on demand</th>");
    expect(table).toContain(
      "<tr><td>fla-bench</td><td>2026-W49</td><td>2</td><td>86</td><td>7</td><td>3</td><td>353</td><td>2.00 MB</td><td>0.25</td><td>4.46 MB (2 packs)</td><td>-</td></tr>",
    );
    expect(table).not.toContain("fla-tests");
    expect(page([week("fla-tests", null)])).not.toContain("Lazy restores and live sharing");
  });
});
