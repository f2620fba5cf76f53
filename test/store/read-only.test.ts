import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors.js";
import { localStore } from "../../src/store/local.js";
import { ReadOnlyMode, ReadOnlyRefusal, readOnlyStore } from "../../src/store/read-only.js";
import type { Store } from "../../src/store/store.js";
import { tempDir } from "../helpers/sandbox.js";

const body = () => Readable.from([Buffer.from("x")]);

/** A store that counts the writes reaching it and answers each as `answer` says. */
function countingStore(answer: () => Promise<void>): Store & { writes: number } {
  const inner = localStore(tempDir("ro-inner"));
  const counted = {
    ...inner,
    writes: 0,
    put: async (name: string, b: Readable) => {
      counted.writes++;
      await answer();
      return inner.put(name, b);
    },
    createIfAbsent: async (name: string, b: Buffer) => {
      counted.writes++;
      await answer();
      return inner.createIfAbsent(name, b);
    },
    delete: async (name: string) => {
      counted.writes++;
      await answer();
      return inner.delete(name);
    },
  };
  return counted;
}

describe("read-only store (store/read-only.ts)", () => {
  it("a read-only job's writes never reach the store; its reads do", async () => {
    const inner = countingStore(async () => {});
    await inner.createIfAbsent("kept", Buffer.from("k"));
    const mode = new ReadOnlyMode("--read-only");
    const store = readOnlyStore(inner, mode);
    const before = inner.writes;
    await expect(store.put("a", body())).rejects.toBeInstanceOf(ReadOnlyRefusal);
    await expect(store.createIfAbsent("b", Buffer.from("b"))).rejects.toThrow(
      "read-only (--read-only): restore only, nothing saved",
    );
    await expect(store.delete("kept")).rejects.toBeInstanceOf(StoreError);
    expect(inner.writes).toBe(before);
    expect((await store.read("kept"))?.toString()).toBe("k");
    expect((await store.list("")).map((o) => o.name)).toEqual(["kept"]);
  });

  it("a write the store forbids (HTTP 403) makes the job read-only: no later write is tried", async () => {
    const denied = Object.assign(new Error("Access Denied"), {
      name: "AccessDenied",
      $metadata: { httpStatusCode: 403 },
    });
    const inner = countingStore(async () => {
      throw new StoreError("s3://b/: writing leases/x: AccessDenied: HTTP 403", denied);
    });
    const mode = new ReadOnlyMode();
    const store = readOnlyStore(inner, mode);
    await expect(store.put("a", body())).rejects.toBeInstanceOf(ReadOnlyRefusal);
    expect(mode.why).toMatch(/forbids writes: HTTP 403 AccessDenied/);
    await expect(store.createIfAbsent("b", Buffer.from("b"))).rejects.toBeInstanceOf(ReadOnlyRefusal);
    await expect(store.delete("c")).rejects.toBeInstanceOf(ReadOnlyRefusal);
    expect(inner.writes).toBe(1);
  });

  it("any other failure stays what it was, and the job may still write", async () => {
    let fail = true;
    const inner = countingStore(async () => {
      if (fail) throw new StoreError("s3://b/: writing x: ServiceUnavailable: HTTP 503");
    });
    const mode = new ReadOnlyMode();
    const store = readOnlyStore(inner, mode);
    const err = await store.put("a", body()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect(err).not.toBeInstanceOf(ReadOnlyRefusal);
    expect(mode.why).toBeNull();
    fail = false;
    expect(await store.createIfAbsent("b", Buffer.from("b"))).toBe(true);
  });
});
