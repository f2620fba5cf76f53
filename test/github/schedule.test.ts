import { describe, expect, it } from "vitest";
import { isTimeZone, jitterMinute, sameFireTimes, toUtcCron } from "../../src/github/schedule.js";

const FROM = new Date("2027-01-01T00:00:00Z");

describe("schedules", () => {
  it("turns Monday, Wednesday and Friday at midnight in Shanghai into one exact UTC cron", () => {
    const r = toUtcCron("0 0 * * 1,3,5", "Asia/Shanghai", FROM);
    expect(r).toEqual({ ok: true, cron: "0 16 * * 0,2,4" });
    if (r.ok) expect(sameFireTimes("0 0 * * 1,3,5", "Asia/Shanghai", r.cron, FROM)).toBe(true);
  });

  it("handles half-hour offsets and a shift to the next day", () => {
    expect(toUtcCron("30 2 * * *", "Asia/Kolkata", FROM)).toEqual({ ok: true, cron: "0 21 * * *" });
    expect(toUtcCron("0 22 * * 5", "America/Bogota", FROM)).toEqual({ ok: true, cron: "0 3 * * 6" });
  });

  it("refuses zones with daylight saving time, saying why", () => {
    const r = toUtcCron("0 0 * * 1,3,5", "Europe/Berlin", FROM);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.reason).toMatch(
        /Europe\/Berlin changes its UTC offset during the year \(UTC\+1 and UTC\+2, daylight saving time\)/,
      );
  });

  it("refuses a day shift that a day-of-month field cannot follow, and times split across midnight UTC", () => {
    const r = toUtcCron("0 3 1 * *", "Asia/Tokyo", FROM);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/previous day, which a day-of-month or month field cannot follow/);
    const split = toUtcCron("0 6,12 * * *", "Asia/Tokyo", FROM);
    expect(split.ok).toBe(false);
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
