import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  decodeManifest,
  encodeManifest,
  MANIFEST_FORMAT,
  type Manifest,
} from "../../src/manifest/manifest.js";

const hex = (s: string) => createHash("sha256").update(s).digest("hex");

/** A manifest of `n` entries in one pack, as a save would write it. */
function manifestOf(n: number): Manifest {
  return {
    format: MANIFEST_FORMAT,
    key: `bench-s1-${"a".repeat(40)}`,
    prefix: "bench",
    stackId: "s1",
    stack: { python: "3.12", triton: "3.6.0" },
    revision: "a".repeat(40),
    scope: "refs/heads/main",
    createdAt: "2026-12-01T00:00:00.000Z",
    producer: "kcache test",
    parent: null,
    caches: [{ name: "triton", kind: "triton" }],
    packs: [
      { object: "packs/p-0", sha256: hex("pack"), size: 100, entryBytes: 1000, entries: n, savedBy: "k" },
    ],
    entries: Array.from({ length: n }, (_, i) => ({
      cache: "triton",
      name: `E${i}`,
      sha256: hex(`entry ${i}`),
      size: 10,
      files: 2,
      pack: 0,
    })),
  };
}

describe("the manifest format (src/manifest/)", () => {
  it("reads back what it wrote, field for field", () => {
    const m = manifestOf(3);
    expect(decodeManifest(encodeManifest(m), "m.json")).toEqual(m);
  });

  it("refuses a manifest whose body changed after its integrity line was written, naming the object", () => {
    const text = encodeManifest(manifestOf(2)).toString().replace('"E1"', '"E9"');
    expect(() => decodeManifest(Buffer.from(text), "manifests/x")).toThrow(
      /manifests\/x: manifest digest mismatch/,
    );
  });

  it("refuses a truncated manifest, a manifest that lists an entry twice, and a bad field", () => {
    const whole = encodeManifest(manifestOf(2));
    expect(() => decodeManifest(whole.subarray(0, 20), "m")).toThrow(/truncated|integrity line/);
    const twice = manifestOf(2);
    twice.entries.push({ ...(twice.entries[0] as Manifest["entries"][number]) });
    expect(() => decodeManifest(encodeManifest(twice), "m")).toThrow(/entry triton\/E0 is listed twice/);
    const bad = manifestOf(1) as unknown as { entries: { files: number }[] };
    (bad.entries[0] as { files: number }).files = 0;
    expect(() => decodeManifest(encodeManifest(bad as unknown as Manifest), "m")).toThrow(
      /manifest field entries\.0\.files/,
    );
  });

  it("refuses an entry whose last use is a save the manifest does not list, or one after its own", () => {
    const m = manifestOf(2);
    m.generation = 4;
    m.uses = [{ generation: 3, revision: "b".repeat(40), at: m.createdAt }];
    (m.entries[0] as { usedIn?: number }).usedIn = 3;
    expect(decodeManifest(encodeManifest(m), "m").entries[0]?.usedIn).toBe(3);
    (m.entries[1] as { usedIn?: number }).usedIn = 2;
    expect(() => decodeManifest(encodeManifest(m), "m")).toThrow(
      /E1 was last used at save 2, which the manifest does not list/,
    );
    m.uses.push({ generation: 9, revision: "c".repeat(40), at: m.createdAt });
    (m.entries[1] as { usedIn?: number }).usedIn = 9;
    expect(() => decodeManifest(encodeManifest(m), "m")).toThrow(/lists save 9, after its own \(4\)/);
  });

  it.each([
    [
      "a use dated after the manifest's creation",
      (m: Manifest) => {
        m.uses = [{ generation: 3, revision: "b", at: "2027-01-01T00:00:00.000Z" }];
      },
      /dates save 3 2027-01-01T00:00:00.000Z, after the manifest's creation/,
    ],
    [
      "a use of a later save than the manifest's own",
      (m: Manifest) => {
        m.uses = [{ generation: 5, revision: "b", at: m.createdAt }];
        (m.entries[0] as { usedIn?: number }).usedIn = 5;
      },
      /lists save 5, after its own \(4\)/,
    ],
    [
      "a save listed twice",
      (m: Manifest) => {
        m.uses = [
          { generation: 3, revision: "b", at: m.createdAt },
          { generation: 3, revision: "c", at: m.createdAt },
        ];
      },
      /lists save 3 out of order or twice/,
    ],
    [
      "saves out of order",
      (m: Manifest) => {
        m.uses = [
          { generation: 4, revision: "b", at: m.createdAt },
          { generation: 3, revision: "c", at: m.createdAt },
        ];
        (m.entries[1] as { usedIn?: number }).usedIn = 4;
      },
      /lists save 3 out of order or twice/,
    ],
    [
      "a date that is not a date",
      (m: Manifest) => {
        m.uses = [{ generation: 3, revision: "b", at: "last tuesday" }];
      },
      /uses\.0\.at: not a date/,
    ],
    [
      "a save that is no entry's last use",
      (m: Manifest) => {
        m.uses = [
          { generation: 2, revision: "b", at: m.createdAt },
          { generation: 3, revision: "c", at: m.createdAt },
        ];
      },
      /lists save 2, which is no entry's last use/,
    ],
    [
      "20,000 uses",
      (m: Manifest) => {
        m.generation = 30_000;
        m.uses = Array.from({ length: 20_000 }, (_, i) => ({
          generation: i,
          revision: "b",
          at: m.createdAt,
        }));
      },
      /manifest field uses/,
    ],
  ])("refuses forged use records as damaged: %s", (_what, forge, message) => {
    const m = manifestOf(2);
    m.generation = 4;
    (m.entries[0] as { usedIn?: number }).usedIn = 3;
    forge(m);
    expect(() => decodeManifest(encodeManifest(m), "m")).toThrow(message);
  });

  it("reads a manifest written before use was recorded (no generation, no uses)", () => {
    const m = decodeManifest(encodeManifest(manifestOf(3)), "m");
    expect(m.generation).toBeUndefined();
    expect(m.entries.every((e) => e.usedIn === undefined)).toBe(true);
  });
});

type Raw = Record<string, unknown> & { entries: Record<string, unknown>[] };

describe("autotune producers in a manifest (docs/benchmarks.md)", () => {
  const tuning = {
    id: 0,
    profile: "kda-bench",
    benchmark: true,
    device: "NVIDIA H200",
    env: { FLA_BENCH_REP_MS: "200" },
    revision: "a".repeat(40),
    at: "2026-12-01T00:00:00.000Z",
  };
  const withTuning = (change: (m: Raw) => void) => {
    const m = manifestOf(2) as unknown as Raw;
    m.tunings = [structuredClone(tuning)];
    (m.entries[0] as Record<string, unknown>).tunedBy = 0;
    change(m);
    return encodeManifest(m as unknown as Manifest);
  };

  it("reads a manifest whose results name a listed producer, and an old one as producer unknown", () => {
    const m = decodeManifest(
      withTuning(() => {}),
      "ok",
    );
    expect(m.tunings?.[0]).toEqual(tuning);
    expect(m.entries[0]?.tunedBy).toBe(0);
    expect(decodeManifest(encodeManifest(manifestOf(2)), "old").tunings).toBeUndefined();
  });

  it.each([
    [
      "a producer the manifest does not list",
      (m: Raw) => {
        (m.entries[0] as Record<string, unknown>).tunedBy = 7;
      },
      /names autotune producer 7, which the manifest does not list/,
    ],
    [
      "a device model that is not a string",
      (m: Raw) => {
        (m.tunings as Record<string, unknown>[])[0] = { ...tuning, device: 900 };
      },
      /tunings\.0\.device/,
    ],
    [
      "a benchmark flag that is not a boolean",
      (m: Raw) => {
        (m.tunings as Record<string, unknown>[])[0] = { ...tuning, benchmark: "yes" };
      },
      /tunings\.0\.benchmark/,
    ],
    [
      "a huge device name",
      (m: Raw) => {
        (m.tunings as Record<string, unknown>[])[0] = { ...tuning, device: "x".repeat(100_000) };
      },
      /tunings\.0\.device/,
    ],
    [
      "40 environment variables",
      (m: Raw) => {
        (m.tunings as Record<string, unknown>[])[0] = {
          ...tuning,
          env: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`V${i}`, "1"])),
        };
      },
      /more than 32 variables/,
    ],
    [
      "a time that is not a date",
      (m: Raw) => {
        (m.tunings as Record<string, unknown>[])[0] = { ...tuning, at: "yesterday" };
      },
      /not a date/,
    ],
    [
      "a producer listed twice",
      (m: Raw) => {
        m.tunings = [tuning, tuning];
      },
      /autotune producer twice/,
    ],
    [
      "an unknown field in a producer",
      (m: Raw) => {
        (m.tunings as Record<string, unknown>[])[0] = { ...tuning, trusted: true };
      },
      /tunings\.0/,
    ],
    [
      "a salt path that is too long",
      (m: Raw) => {
        (m.entries[0] as Record<string, unknown>).salt = { paths: ["p".repeat(1000)], digest: hex("x") };
      },
      /entries\.0\.salt/,
    ],
  ])("refuses as damaged: %s", (_what, change, message) => {
    expect(() => decodeManifest(withTuning(change), "lying")).toThrow(message);
  });
});
