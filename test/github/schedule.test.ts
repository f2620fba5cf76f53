import { Cron } from "croner";
import { describe, expect, it } from "vitest";
import { CRON_FIELDS, parseCron } from "../../src/config/cron.js";
import { isTimeZone } from "../../src/config/time-zone.js";
import {
  fireInstants,
  jitterMinute,
  sameFireTimes,
  toUtcCron,
  unionInstants,
  yearOffsets,
} from "../../src/github/schedule.js";

const FROM = new Date("2027-01-01T00:00:00Z");

describe("cron parsing", () => {
  it("accepts numbers, names, lists, ranges and steps as GitHub does", () => {
    expect(parseCron("0 0 * * MON").dayOfWeek.values).toEqual([1]);
    expect(parseCron("0 0 * JAN-MAR,dec SUN,7").month.values).toEqual([1, 2, 3, 12]);
    expect(parseCron("0 0 * JAN-MAR,dec SUN,7").dayOfWeek.values).toEqual([0]);
    expect(parseCron("5-55/10 */6 1-31/15 * *").minute.values).toEqual([5, 15, 25, 35, 45, 55]);
    expect(parseCron("5-55/10 */6 1-31/15 * *").hour.values).toEqual([0, 6, 12, 18]);
    expect(parseCron("5-55/10 */6 1-31/15 * *").dayOfMonth.values).toEqual([1, 16, 31]);
  });

  it.each([
    ["61 0 * * 1", /minute field "61": 61 is out of range \(0-59\)/],
    ["0 24 * * *", /hour field "24": 24 is out of range \(0-23\)/],
    ["0 0 0 * *", /day-of-month field "0": 0 is out of range \(1-31\)/],
    ["0 0 * 13 *", /month field "13": 13 is out of range \(1-12 or JAN-DEC\)/],
    ["0 0 * * 8", /day-of-week field "8": 8 is out of range \(0-6 or SUN-SAT\)/],
    ["0 0 * * MOX", /day-of-week field "MOX": "MOX" is not a number or name/],
    ["0 0 L * *", /day-of-month field "L"/],
    ["0 0 * * 5#2", /day-of-week field "5#2"/],
    ["0 0 ? * *", /day-of-month field "\?"/],
    ["0 0 * * 5-1", /range 5-1 runs backwards/],
    ["*/0 * * * *", /step 0 must be at least 1/],
    ["0 0 * *", /has 4 fields; a cron has 5/],
  ])("refuses %s, naming the field", (cron, message) => {
    expect(() => parseCron(cron)).toThrow(message);
  });
});

describe("schedules in UTC", () => {
  it("turns Monday, Wednesday and Friday at midnight in Shanghai into one exact UTC cron", () => {
    const r = toUtcCron("0 0 * * 1,3,5", "Asia/Shanghai", FROM);
    expect(r).toEqual({ ok: true, crons: ["0 16 * * 0,2,4"] });
    if (r.ok) expect(sameFireTimes("0 0 * * 1,3,5", "Asia/Shanghai", r.crons, FROM)).toBe(true);
  });

  it("handles names, half-hour offsets and a shift to the next day", () => {
    expect(toUtcCron("30 2 * * *", "Asia/Kolkata", FROM)).toEqual({ ok: true, crons: ["0 21 * * *"] });
    expect(toUtcCron("0 22 * * 5", "America/Bogota", FROM)).toEqual({ ok: true, crons: ["0 3 * * 6"] });
    expect(toUtcCron("0 0 * * MON", "UTC", FROM)).toEqual({ ok: true, crons: ["0 0 * * MON"] });
    expect(toUtcCron("0 0 * * MON", "Asia/Shanghai", FROM)).toEqual({ ok: true, crons: ["0 16 * * 0"] });
  });

  it("is exact with several lines where one cannot say it (Kolkata 0,30 0), and with minutes that wrap (Kathmandu)", () => {
    const kolkata = toUtcCron("0,30 0 * * *", "Asia/Kolkata", FROM);
    expect(kolkata).toEqual({ ok: true, crons: ["0 19 * * *", "30 18 * * *"] });
    if (kolkata.ok) expect(sameFireTimes("0,30 0 * * *", "Asia/Kolkata", kolkata.crons, FROM)).toBe(true);
    const kathmandu = toUtcCron("5-55/10 * * * *", "Asia/Kathmandu", FROM);
    expect(kathmandu).toEqual({ ok: true, crons: ["0-50/10 * * * *"] });
    const tokyo = toUtcCron("0 6,12 * * *", "Asia/Tokyo", FROM);
    expect(tokyo).toEqual({ ok: true, crons: ["0 3,21 * * *"] });
  });

  it("refuses zones with daylight saving time, saying why", () => {
    const r = toUtcCron("0 0 * * 1,3,5", "Europe/Berlin", FROM);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.reason).toMatch(
        /Europe\/Berlin changes its UTC offset during the year \(UTC\+1 and UTC\+2, daylight saving time\)/,
      );
  });

  it("refuses a day shift that a day-of-month field cannot follow, and bad crons with the field named", () => {
    const r = toUtcCron("0 3 1 * *", "Asia/Tokyo", FROM);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.reason).toMatch(/03:00 in Asia\/Tokyo is on the previous day in UTC, which a day-of-month/);
    const bad = toUtcCron("61 0 * * 1", "Asia/Tokyo", FROM);
    expect(bad).toEqual({ ok: false, reason: expect.stringMatching(/minute field "61"/) });
  });

  it("knows IANA names", () => {
    expect(isTimeZone("Asia/Shanghai")).toBe(true);
    expect(isTimeZone("UTC")).toBe(true);
    expect(isTimeZone("Asia/Beijing")).toBe(false);
    expect(isTimeZone("CST")).toBe(false);
  });

  it("moves minute 0 to a fixed other minute when asked", () => {
    const j = jitterMinute("0 0 * * 1,3,5", "org/repo:kda-bench");
    expect(j).toMatch(/^([7-9]|[1-4]\d|5[0-3]) 0 \* \* 1,3,5$/);
    expect(jitterMinute("0 0 * * 1,3,5", "org/repo:kda-bench")).toBe(j);
    expect(jitterMinute("15 0 * * *", "x")).toBe("15 0 * * *");
  });
});

/** A small seeded generator, so a failure names a case that can be replayed. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random cron field in GitHub's syntax: *, a value, a list, a range, a step, names. */
function randomField(r: () => number, index: number): string {
  const { lo, hi, names } = CRON_FIELDS[index] as (typeof CRON_FIELDS)[number];
  const v = () => lo + Math.floor(r() * (hi - lo + 1));
  const name = (x: number) => (names && r() < 0.3 ? (names[x - lo] as string) : String(x));
  const star = index >= 2 ? 0.5 : index === 1 ? 0.15 : 0.02;
  const x = r();
  if (x < star) return "*";
  if (x < star + 0.3) return name(v());
  if (x < star + 0.45) {
    const vs = [...new Set([v(), v(), v()])].sort((a, b) => a - b);
    return vs.map(name).join(",");
  }
  if (x < star + 0.6) {
    const [a, b] = [v(), v()].sort((p, q) => p - q) as [number, number];
    return `${name(a)}-${name(b)}`;
  }
  // Steps of 10 minutes or more, as a prewarm schedule would use (and a year of them stays quick to check).
  const step = index === 0 ? 10 + Math.floor(r() * 21) : 2 + Math.floor(r() * 6);
  return r() < 0.5 ? `*/${step}` : `${v()}-${hi}/${step}`;
}

const ZONES = [
  "UTC",
  "Asia/Shanghai",
  "Asia/Kolkata",
  "Asia/Kathmandu",
  "Asia/Tokyo",
  "Asia/Dubai",
  "Australia/Eucla",
  "Asia/Yangon",
  "Pacific/Kiritimati",
  "Pacific/Pago_Pago",
  "America/Bogota",
  "America/Sao_Paulo",
  "Asia/Tehran",
  "Africa/Lagos",
  "Asia/Singapore",
  "America/New_York",
  "Europe/Berlin",
  "Australia/Adelaide",
  "Pacific/Chatham",
  "America/St_Johns",
];

/**
 * Crons in the fuzz: fixed, so the work is bounded and the same on every machine (FUZZ_N=1000 for a
 * longer run). No wall-clock limit: a loaded 2-core machine takes minutes where an idle one takes
 * seconds, and that is no failure.
 */
const FUZZ_N = Number(process.env.FUZZ_N ?? 300);

describe(`--utc on ${FUZZ_N} random crons x 20 zones`, () => {
  it("is exact (every fire instant of a year, by croner's parse of both sides) or refused with a reason", () => {
    const r = rng(20261201);
    let exact = 0;
    let refused = 0;
    const sample: [string, string, string[]][] = [];
    for (let i = 0; i < FUZZ_N; i++) {
      const cron = Array.from({ length: 5 }, (_, f) => randomField(r, f)).join(" ");
      for (const zone of ZONES) {
        const answer = toUtcCron(cron, zone, FROM);
        if (!answer.ok) {
          expect(answer.reason, `${cron} in ${zone}`).toMatch(/\S/);
          refused++;
          continue;
        }
        exact++;
        const offsets = yearOffsets(zone, FROM);
        expect(offsets, `${cron} in ${zone}`).toHaveLength(1);
        for (const line of answer.crons) expect(() => new Cron(line, { paused: true }), line).not.toThrow();
        const want = fireInstants(cron, offsets[0] as number, FROM);
        const got = unionInstants(answer.crons, FROM);
        const differ =
          got.length !== want.length
            ? Math.min(got.length, want.length)
            : got.findIndex((t, k) => t !== want[k]);
        if (differ !== -1)
          expect.fail(
            `${cron} in ${zone} -> ${answer.crons.join(" | ")}: first difference at ${new Date(want[differ] ?? got[differ] ?? 0).toISOString()}`,
          );
        if (sample.length < 25 && want.length < 120) sample.push([cron, zone, answer.crons]);
      }
    }
    // Most fixed-offset cases convert; daylight-saving zones never do.
    expect(exact).toBeGreaterThan(FUZZ_N * 5);
    expect(refused).toBeGreaterThan(FUZZ_N * 5);
    // The instant-by-instant oracle agrees with croner's own scheduler in the real time zone.
    for (const [cron, zone, crons] of sample)
      expect(sameFireTimes(cron, zone, crons, FROM), `${cron} in ${zone}`).toBe(true);
  }, 0);
});
