import { createHash } from "node:crypto";
import { Cron } from "croner";

/** A valid IANA time zone name ("Asia/Shanghai"), as the runtime's time zone database knows it. */
export function isTimeZone(name: string): boolean {
  if (name !== "UTC" && !name.includes("/")) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const RANGES = [
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 6],
] as const;

/** The values a cron field allows (lists, ranges, steps; 7 as Sunday in the day-of-week field). */
export function expandField(field: string, index: number): number[] {
  const [lo, hi] = RANGES[index] as readonly [number, number];
  const out = new Set<number>();
  for (const part of field.split(",")) {
    const [range, stepText] = part.split("/");
    const step = stepText ? Number(stepText) : 1;
    let a = lo;
    let b = hi;
    if (range !== "*") {
      const [x, y] = (range ?? "").split("-");
      a = Number(x);
      b = y === undefined ? (stepText ? hi : a) : Number(y);
    }
    if (![a, b, step].every(Number.isInteger) || step < 1 || a < lo || b > (index === 4 ? 7 : hi) || a > b) {
      throw new Error(`cron field "${field}" is not valid here`);
    }
    for (let v = a; v <= b; v += step) out.add(index === 4 && v === 7 ? 0 : v);
  }
  return [...out].sort((x, y) => x - y);
}

function compress(values: number[], index: number): string {
  const [lo, hi] = RANGES[index] as readonly [number, number];
  if (values.length === hi - lo + 1) return "*";
  return values.join(",");
}

/** Offsets from UTC (minutes) that `timeZone` uses during the year after `from`. */
export function yearOffsets(timeZone: string, from: Date): number[] {
  const seen = new Set<number>();
  const fmt = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
  });
  for (let h = 0; h <= 366 * 24; h += 6) {
    const t = new Date(from.getTime() + h * 3600_000);
    const p = Object.fromEntries(fmt.formatToParts(t).map((x) => [x.type, x.value]));
    const local = Date.UTC(
      Number(p.year),
      Number(p.month) - 1,
      Number(p.day),
      Number(p.hour),
      Number(p.minute),
    );
    seen.add(Math.round((local - Math.floor(t.getTime() / 60_000) * 60_000) / 60_000));
  }
  return [...seen].sort((a, b) => a - b);
}

export type UtcConversion = { ok: true; cron: string } | { ok: false; reason: string };

/**
 * One UTC cron that fires at exactly the same instants as `cron` in `timeZone` over a whole year,
 * or the reason there is none (daylight saving time; a shift across midnight that day-of-month or
 * month fields cannot follow; fires on both sides of midnight UTC). Checked against croner's own
 * evaluation in that zone.
 */
export function toUtcCron(cron: string, timeZone: string, from: Date = new Date()): UtcConversion {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5) return { ok: false, reason: `"${cron}" is not a 5-field cron expression` };
  if (!isTimeZone(timeZone)) return { ok: false, reason: `"${timeZone}" is not an IANA time zone name` };
  const offsets = yearOffsets(timeZone, from);
  if (offsets.length > 1) {
    const hours = offsets.map((o) => `UTC${o >= 0 ? "+" : "-"}${Math.abs(o) / 60}`).join(" and ");
    return {
      ok: false,
      reason: `${timeZone} changes its UTC offset during the year (${hours}, daylight saving time), so no single UTC cron fires at the same local time all year; keep the timezone: key or pick a zone without daylight saving`,
    };
  }
  const offset = offsets[0] ?? 0;
  let minutes: number[];
  let hours: number[];
  try {
    minutes = expandField(fields[0] as string, 0);
    hours = expandField(fields[1] as string, 1);
    expandField(fields[2] as string, 2);
    expandField(fields[3] as string, 3);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  // Shift every local (hour, minute) to UTC; all must land on the same day shift and form a grid.
  const shifted = hours.flatMap((h) =>
    minutes.map((m) => {
      const utc = h * 60 + m - offset;
      return {
        day: Math.floor(utc / 1440),
        h: Math.floor((((utc % 1440) + 1440) % 1440) / 60),
        m: ((utc % 60) + 60) % 60,
      };
    }),
  );
  const days = new Set(shifted.map((s) => s.day));
  if (days.size > 1) {
    return {
      ok: false,
      reason: `in UTC these times fall on two different days, which one cron line cannot express`,
    };
  }
  const day = [...days][0] ?? 0;
  const utcHours = [...new Set(shifted.map((s) => s.h))].sort((a, b) => a - b);
  const utcMinutes = [...new Set(shifted.map((s) => s.m))].sort((a, b) => a - b);
  if (utcHours.length * utcMinutes.length !== shifted.length) {
    return { ok: false, reason: "the shifted hours and minutes no longer form one cron grid" };
  }
  let [, , dom, month, dow] = fields as [string, string, string, string, string];
  if (day !== 0) {
    if (dom !== "*" || month !== "*") {
      return {
        ok: false,
        reason: `in UTC the run moves to the ${day < 0 ? "previous" : "next"} day, which a day-of-month or month field cannot follow`,
      };
    }
    if (dow !== "*")
      dow = compress(
        expandField(dow, 4)
          .map((d) => (((d + day) % 7) + 7) % 7)
          .sort((a, b) => a - b),
        4,
      );
  }
  const utc = [compress(utcMinutes, 0), compress(utcHours, 1), dom, month, dow].join(" ");
  const verified = sameFireTimes(cron, timeZone, utc, from);
  return verified
    ? { ok: true, cron: utc }
    : { ok: false, reason: `conversion to "${utc}" could not be verified over a year` };
}

/** Whether two schedules fire at the same instants over the year after `from`, by croner. */
export function sameFireTimes(cron: string, timeZone: string, utcCron: string, from: Date): boolean {
  const until = from.getTime() + 366 * 86400_000;
  const runs = (c: Cron) => {
    const out: number[] = [];
    let t: Date | null = from;
    while (t && out.length < 20_000) {
      t = c.nextRun(t);
      if (!t || t.getTime() > until) break;
      out.push(t.getTime());
    }
    return out;
  };
  const a = runs(new Cron(cron, { timezone: timeZone }));
  const b = runs(new Cron(utcCron, { timezone: "UTC" }));
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * Moves a schedule off minute 0 (where GitHub's scheduler is busiest and drops runs), to a minute
 * that depends only on `seed`, so regenerating the workflow gives the same one.
 */
export function jitterMinute(cron: string, seed: string): string {
  const fields = cron.trim().split(/\s+/);
  if (fields[0] !== "0") return cron;
  const minute = 7 + (createHash("sha256").update(seed).digest().readUInt16BE(0) % 47);
  return [String(minute), ...fields.slice(1)].join(" ");
}
