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
