import { describe, expect, it } from "vitest";
import { chooseEvictions, type EvictionCandidate, unusedTooLong } from "../../../src/cache/usage/eviction.js";
import type { Use } from "../../../src/manifest/manifest.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-12-01T12:00:00Z");
const use = (generation: number, daysAgo = 0): Use => ({
  generation,
  revision: `r${generation}`,
  at: new Date(T0 - daysAgo * DAY).toISOString(),
});
const rules = (runs: number, days: number, maxBytes: number | null = null) => ({
  keepUnusedRuns: runs,
  keepUnusedDays: days,
  maxBytes,
});
const entry = (id: string, size: number, lastUsed: Use): EvictionCandidate => ({ id, size, lastUsed });

describe("eviction by use (save.keep-unused, save.max-bytes)", () => {
  it("keeps an entry unused for runs-1 saves and drops it at the runs-th", () => {
    const now = use(20);
    expect(unusedTooLong(use(16), now, rules(5, 0))).toBeNull();
    expect(unusedTooLong(use(15), now, rules(5, 0))).toBe("runs");
    expect(unusedTooLong(use(0), now, rules(0, 0))).toBeNull();
  });

  it("drops an entry unused for `days` days, and never one whose use a clock ahead of ours stamped", () => {
    const now = use(3);
    expect(unusedTooLong(use(2, 29.9), now, rules(0, 30))).toBeNull();
    expect(unusedTooLong(use(2, 30), now, rules(0, 30))).toBe("days");
    expect(unusedTooLong(use(2, -400), now, rules(0, 30))).toBeNull();
    expect(unusedTooLong(use(2, 1000), now, rules(0, 0))).toBeNull();
  });

  it("never drops an entry used now, however old the rules would call it", () => {
    const now = use(9);
    expect(unusedTooLong(now, now, rules(1, 0.0001))).toBeNull();
    const out = chooseEvictions([entry("a", 10, now)], now, rules(1, 0.0001));
    expect(out.size).toBe(0);
  });

  it("either rule alone evicts: runs, or days, whichever comes first", () => {
    const now = use(10);
    const out = chooseEvictions(
      [entry("old-runs", 1, use(4, 1)), entry("old-days", 1, use(9, 45)), entry("fresh", 1, use(9, 1))],
      now,
      rules(5, 30),
    );
    expect(Object.fromEntries(out)).toEqual({ "old-runs": "runs", "old-days": "days" });
  });

  it("over the size cap, drops the least recently used first and stops once under it", () => {
    const now = use(10);
    const out = chooseEvictions(
      [
        entry("used-now", 50, now),
        entry("used-9", 30, use(9)),
        entry("used-7", 30, use(7)),
        entry("used-8", 30, use(8)),
      ],
      now,
      rules(0, 0, 100),
    );
    expect(Object.fromEntries(out)).toEqual({ "used-7": "max-bytes", "used-8": "max-bytes" });
  });

  it("drops entries the job used now only when its own working set is over the cap", () => {
    const now = use(2);
    const out = chooseEvictions([entry("a", 60, now), entry("b", 60, now)], now, rules(0, 0, 100));
    expect(out.size).toBe(1);
    expect(chooseEvictions([entry("a", 60, now)], now, rules(0, 0, 100)).size).toBe(0);
  });
});
