import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { FaultRow } from "../faults/harness.js";
import { render } from "../faults/table.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

describe("RELIABILITY.md", () => {
  it("shows exactly the table of its raw file, bench/results/faults.json, with nothing corrupt or foreign", () => {
    const raw = JSON.parse(fs.readFileSync(path.join(ROOT, "bench/results/faults.json"), "utf8")) as {
      rows: FaultRow[];
    };
    const doc = fs.readFileSync(path.join(ROOT, "RELIABILITY.md"), "utf8");
    expect(doc).toContain(render(raw.rows));
    expect(raw.rows.length).toBeGreaterThanOrEqual(20);
    for (const r of raw.rows) {
      expect(r, r.fault).toMatchObject({ corruptRestores: 0, writesOutside: 0, foreignInDefault: 0 });
      if (r.peakRssMb !== null) expect(r.peakRssMb, r.fault).toBeLessThan(200);
    }
  });
});

describe("RELIABILITY.md's suite under load", () => {
  it("is the table of bench/results/suite-under-load-*.json, at a load of 16 or more on 2 cores: every suite of the latest batch passed", async () => {
    const { suiteUnderLoadTable } = await import("../../bench/suite-load-table.js");
    const dir = path.join(ROOT, "bench/results");
    const batches = fs
      .readdirSync(dir)
      .filter((f) => /^suite-under-load-.*\.json$/.test(f))
      .sort()
      .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")));
    expect(batches.length).toBeGreaterThan(0);
    const doc = fs.readFileSync(path.join(ROOT, "RELIABILITY.md"), "utf8");
    expect(doc).toContain(suiteUnderLoadTable(batches).join("\n"));
    const { median } = await import("../../bench/measure.js");
    for (const b of batches) {
      expect(b.cores).toBe(2);
      expect(median(b.load)).toBeGreaterThanOrEqual(16);
    }
    // An earlier batch that failed stays in the table, with why in the prose; the latest must pass.
    const latest = batches.at(-1);
    for (const r of latest.runs) expect(r, latest.commit).toMatchObject({ rc: 0, failed: [] });
  });
});

describe("RELIABILITY.md's simulation", () => {
  const doc = () => fs.readFileSync(path.join(ROOT, "RELIABILITY.md"), "utf8");
  const block = (name: string) => {
    const m = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(doc());
    return (m?.[1] ?? "").trimEnd();
  };

  it("states each invariant as test/sim/oracle.ts does", async () => {
    const { INVARIANTS } = await import("../sim/oracle.js");
    expect(block("invariants")).toBe(
      Object.entries(INVARIANTS)
        .map(([k, v]) => `- ${k}: ${v}`)
        .join("\n"),
    );
  });

  it("lists every sequence the simulation found, as test/sim/found.ts replays them", async () => {
    const { FOUND, FOUND_ON_S3 } = await import("../sim/found.js");
    expect(block("found")).toBe(
      [...FOUND.map(([what]) => `- ${what}`), ...FOUND_ON_S3.map(([what]) => `- on S3: ${what}`)].join("\n"),
    );
  });

  it("shows the long runs of bench/results/sim-*.json, and says what became of every seed that violated an invariant", async () => {
    const { simTable } = await import("../../bench/sim-table.js");
    const dir = path.join(ROOT, "bench/results");
    const reports = fs
      .readdirSync(dir)
      .filter((f) => /^sim-.*\.json$/.test(f))
      .sort()
      .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")));
    expect(block("sim")).toBe(simTable(reports).join("\n"));
    expect(reports.length).toBeGreaterThan(0);
    // A seed that found a bug stays in the table; the prose names it (found.ts replays the fixed ones).
    for (const r of reports.flatMap((x) => x.results).filter((x: { failed: boolean }) => x.failed))
      expect(doc(), `seed ${r.seed}`).toMatch(new RegExp(`seeds? (\\d+ and )?${r.seed}\\b`));
  });
});
