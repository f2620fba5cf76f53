import { describe, expect, it } from "vitest";
import { readRunRecords, weeklyStats } from "../../src/history/stats.js";
import { runObject } from "../../src/store/layout.js";
import { localStore } from "../../src/store/local.js";
import { plantHostileRecords, runRecordLike } from "../helpers/run-records.js";
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

  it("a record dated after the store received it (a forged 2100) is not a run: counted unreadable, in no --since window", async () => {
    const dir = tempDir("records-future");
    const s = localStore(dir);
    await s.createIfAbsent(
      runObject("branch/main", "bench", "a"),
      Buffer.from(JSON.stringify(runRecordLike())),
    );
    await s.createIfAbsent(
      runObject("branch/main", "bench", "z"),
      Buffer.from(JSON.stringify(runRecordLike({ startedAt: "2100-01-01T00:00:00.000Z" }))),
    );
    const { records, unreadable } = await readRunRecords(s);
    expect(records.map((r) => r.startedAt)).toEqual([runRecordLike().startedAt]);
    expect(unreadable).toBe(1);
  });
});
