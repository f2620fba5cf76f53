import { describe, expect, it } from "vitest";
import { readRunRecords, weeklyStats } from "../../src/history/stats.js";
import { localStore } from "../../src/store/local.js";
import { plantHostileRecords } from "../helpers/run-records.js";
import { tempDir } from "../helpers/sandbox.js";

/** Run records are data from the store: validated as manifests are, never trusted for their shape. */
describe("run records that kcache did not write", () => {
  it("are skipped and counted: kernels null, compiled 'many', a pull request's record claiming branch/main", async () => {
    const dir = tempDir("records");
    await plantHostileRecords(dir);
    const { records, unreadable } = await readRunRecords(localStore(dir));
    expect(records).toHaveLength(1);
    expect(unreadable).toBe(4);
    const [week] = weeklyStats(records.filter((r) => r.scope === "branch/main"));
    expect(week).toMatchObject({ runs: 1, kernelsCompiled: 12 });
  });
});
