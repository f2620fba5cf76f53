import { describe, expect, it } from "vitest";
import { RUN_RECORD_SCHEMA } from "../../src/history/run-record.js";
import { readRunRecords, weeklyStats } from "../../src/history/stats.js";
import { runObject } from "../../src/store/layout.js";
import { localStore } from "../../src/store/local.js";
import { tempDir } from "../helpers/sandbox.js";

/** Run records are data from the store: validated as manifests are, never trusted for their shape. */
describe("run records that kcache did not write", () => {
  const good = (over: Record<string, unknown> = {}) => ({
    schema: RUN_RECORD_SCHEMA,
    profile: "bench",
    scope: "branch/main",
    key: "bench-aaaaaaaaaaaa-1",
    revision: "1",
    stackId: "aaaaaaaaaaaa",
    startedAt: "2026-12-01T10:00:00.000Z",
    seconds: 12,
    passed: true,
    firstFailure: null,
    stages: [],
    kernels: { status: "observed", source: "listener", loaded: 3, compiled: 12, compileSeconds: 4 },
    prefix: "bench",
    hit: "miss",
    restore: null,
    save: null,
    records: [],
    ...over,
  });

  it("are skipped and counted: kernels null, compiled 'many', a pull request's record claiming branch/main", async () => {
    const store = localStore(tempDir("records"));
    const put = (scope: string, id: string, body: unknown) =>
      store.createIfAbsent(runObject(scope, "bench", id), Buffer.from(JSON.stringify(body)));
    await put("branch/main", "a", good());
    await put("branch/main", "b", good({ kernels: null }));
    await put("branch/main", "c", good({ kernels: { compiled: "many", loaded: 1, compileSeconds: null } }));
    await put("pr/7", "d", good({ scope: "branch/main" }));
    await put("branch/main", "e", good({ startedAt: "yesterday" }));
    const { records, unreadable } = await readRunRecords(store);
    expect(records).toHaveLength(1);
    expect(unreadable).toBe(4);
    const [week] = weeklyStats(records.filter((r) => r.scope === "branch/main"));
    expect(week).toMatchObject({ runs: 1, kernelsCompiled: 12 });
  });
});
