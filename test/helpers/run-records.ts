import { RUN_RECORD_SCHEMA } from "../../src/history/run-record.js";
import { runObject } from "../../src/store/layout.js";
import { localStore } from "../../src/store/local.js";

/** A run record as `kcache run` writes it (one default-branch run that compiled 12 kernels), with `over` on top. */
export function runRecordLike(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
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
  };
}

/**
 * Writes one honest record and four that kcache did not write into a local store: kernels null,
 * compiled "many", a pull request's record claiming branch/main, a start that is not a time.
 */
export async function plantHostileRecords(store: string): Promise<void> {
  const s = localStore(store);
  const put = (scope: string, id: string, body: unknown) =>
    s.createIfAbsent(runObject(scope, "bench", id), Buffer.from(JSON.stringify(body)));
  await put("branch/main", "a", runRecordLike());
  await put("branch/main", "b", runRecordLike({ kernels: null }));
  await put(
    "branch/main",
    "c",
    runRecordLike({ kernels: { compiled: "many", loaded: 1, compileSeconds: null } }),
  );
  await put("pr/7", "d", runRecordLike({ scope: "branch/main" }));
  await put("branch/main", "e", runRecordLike({ startedAt: "yesterday" }));
}
