import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors.js";
import { StalledError } from "../../src/store/idle-timeout.js";
import { latchStalls } from "../../src/store/stall-latch.js";
import type { Store } from "../../src/store/store.js";

/** A store whose every call stalls (or fails), counting the calls that reached it. */
function failing(error: () => Error) {
  let calls = 0;
  const fail = async (): Promise<never> => {
    calls++;
    throw error();
  };
  const store: Store = {
    description: "test store",
    capabilities: { listAll: true, delete: true },
    put: fail,
    createIfAbsent: fail,
    get: fail,
    getRange: fail,
    read: fail,
    exists: fail,
    list: fail,
    delete: fail,
  };
  return { store, calls: () => calls };
}

describe("a store judged stalled once per command", () => {
  it("fails every call after the first stall at once, without reaching the store again", async () => {
    const inner = failing(() => new StalledError("test store: nothing moved for 2 s (stalled)"));
    const store = latchStalls(inner.store);
    await expect(store.get("packs/a")).rejects.toThrow(/stalled/);
    for (const name of ["packs/b", "packs/c", "packs/d"])
      await expect(store.get(name)).rejects.toThrow(/not tried again in this command/);
    await expect(store.put("packs/e", Readable.from([]))).rejects.toBeInstanceOf(StalledError);
    expect(inner.calls()).toBe(1);
  });

  it("keeps trying after a failure that is not a stall (an error status, a missing object)", async () => {
    const inner = failing(() => new StoreError("test store: 503"));
    const store = latchStalls(inner.store);
    for (const name of ["packs/a", "packs/b", "packs/c"])
      await expect(store.get(name)).rejects.toThrow(/503/);
    expect(inner.calls()).toBe(3);
  });
});
