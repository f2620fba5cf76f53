import { createHash } from "node:crypto";
import { Cron, CronPattern } from "croner";
import { CronSyntaxError, formatField, type ParsedCron, parseCron } from "../config/cron.js";
import { isTimeZone } from "../config/time-zone.js";

const offsetsSeen = new Map<string, number[]>();

/** Offsets from UTC (minutes) that `timeZone` uses during the year after `from`. */
export function yearOffsets(timeZone: string, from: Date): number[] {
  const k = `${timeZone} ${from.getTime()}`;
  const known = offsetsSeen.get(k);
  if (known) return known;
  const found = probeOffsets(timeZone, from);
  offsetsSeen.set(k, found);
  return found;
}

function probeOffsets(timeZone: string, from: Date): number[] {
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

export type UtcConversion = { ok: true; crons: string[] } | { ok: false; reason: string };

/** The most schedule lines a conversion may take before it is refused as unreadable. */
export const MAX_UTC_LINES = 12;

/**
 * UTC cron lines (one or several `schedule:` entries) that together fire at exactly the instants
 * `cron` fires in `timeZone` over a whole year, or the reason there are none: daylight saving time
 * (one offset all year is needed), or a shift across midnight that a day-of-month or month field
 * cannot follow. Each local time moves by the zone's offset; times that land on the same day shift
 * share a line's day fields (day-of-week shifted with them), and hours with the same minutes share a
 * line. Checked instant by instant over the year against croner's parse of both sides.
 */
export function toUtcCron(cron: string, timeZone: string, from: Date = new Date()): UtcConversion {
  let parsed: ParsedCron;
  try {
    parsed = parseCron(cron);
  } catch (e) {
    if (e instanceof CronSyntaxError) return { ok: false, reason: e.message };
    throw e;
  }
  if (!isTimeZone(timeZone)) return { ok: false, reason: `"${timeZone}" is not an IANA time zone name` };
  const offsets = yearOffsets(timeZone, from);
  if (offsets.length > 1) {
    const hours = offsets.map(formatOffset).join(" and ");
    return {
      ok: false,
      reason: `${timeZone} changes its UTC offset during the year (${hours}, daylight saving time), so no UTC cron fires at the same local time all year; keep the timezone: key or pick a zone without daylight saving`,
    };
  }
  const offset = offsets[0] ?? 0;
  const { minute, hour, dayOfMonth, month, dayOfWeek } = parsed;
  // Local (hour, minute) pairs moved to UTC, grouped by the day fields they need there.
  const groups = new Map<string, Map<number, Set<number>>>();
  for (const h of hour.values) {
    for (const m of minute.values) {
      const utc = h * 60 + m - offset;
      const shift = Math.floor(utc / 1440);
      if (shift !== 0 && !(dayOfMonth.star && month.star)) {
        return {
          ok: false,
          reason: `${pad(h)}:${pad(m)} in ${timeZone} is on the ${shift < 0 ? "previous" : "next"} day in UTC, which a day-of-month or month field cannot follow; keep the timezone: key`,
        };
      }
      const dow =
        shift === 0
          ? dayOfWeek.text
          : dayOfWeek.star
            ? "*"
            : formatField(
                dayOfWeek.values.map((d) => (((d + shift) % 7) + 7) % 7),
                4,
              );
      const days = `${dayOfMonth.text} ${month.text} ${dow}`;
      const byHour = groups.get(days) ?? new Map<number, Set<number>>();
      groups.set(days, byHour);
      const at = ((utc % 1440) + 1440) % 1440;
      const hh = Math.floor(at / 60);
      const minutes = byHour.get(hh) ?? new Set<number>();
      minutes.add(at % 60);
      byHour.set(hh, minutes);
    }
  }
  const crons: string[] = [];
  for (const [days, byHour] of groups) {
    const hoursByMinutes = new Map<string, { minutes: number[]; hours: number[] }>();
    for (const [hh, ms] of byHour) {
      const minutes = [...ms].sort((a, b) => a - b);
      const k = minutes.join(",");
      const g = hoursByMinutes.get(k) ?? { minutes, hours: [] };
      g.hours.push(hh);
      hoursByMinutes.set(k, g);
    }
    for (const g of hoursByMinutes.values())
      crons.push(`${formatField(g.minutes, 0)} ${formatField(g.hours, 1)} ${days}`);
  }
  crons.sort();
  if (crons.length > MAX_UTC_LINES)
    return {
      ok: false,
      reason: `in UTC this schedule needs ${crons.length} schedule lines (at most ${MAX_UTC_LINES}); keep the timezone: key`,
    };
  return sameInstants(cron, offset, crons, from)
    ? { ok: true, crons }
    : { ok: false, reason: `conversion to "${crons.join('", "')}" could not be verified over a year` };
}

const pad = (n: number) => String(n).padStart(2, "0");
const formatOffset = (o: number) =>
  `UTC${o >= 0 ? "+" : "-"}${Math.floor(Math.abs(o) / 60)}${Math.abs(o) % 60 ? `:${pad(Math.abs(o) % 60)}` : ""}`;

/**
 * The instants a cron fires in the year after `from`, in a zone `offset` minutes ahead of UTC, as
 * croner's parser reads the cron (day-of-month and day-of-week: either matches when both are
 * restricted, as in Vixie cron). Enumerates the fire minutes of each day: exact, and fast.
 */
export function fireInstants(cron: string, offset: number, from: Date, days = 366): number[] {
  const p = new CronPattern(cron);
  const minutes = p.minute.flatMap((on, m) => (on ? [m] : []));
  const hours = p.hour.flatMap((on, h) => (on ? [h] : []));
  if (p.second.findIndex(Boolean) !== 0 || p.second.filter(Boolean).length !== 1)
    throw new Error(`${cron}: croner read a seconds field into it`);
  const start = from.getTime();
  const end = start + days * 86400_000;
  const out: number[] = [];
  const first = Math.floor((start + offset * 60_000) / 86400_000) - 1;
  for (let day = first; day <= first + days + 2; day++) {
    const d = new Date(day * 86400_000);
    // Non-zero means "fires" (croner keeps bit masks in dayOfWeek for its nth-weekday syntax).
    const dom = Boolean(p.day[d.getUTCDate() - 1]);
    const dow = Boolean(p.dayOfWeek[d.getUTCDay()]);
    const month = Boolean(p.month[d.getUTCMonth()]);
    const dayOk =
      p.starDOM && p.starDOW
        ? true
        : p.starDOM
          ? dow
          : p.starDOW
            ? dom
            : p.useAndLogic
              ? dom && dow
              : dom || dow;
    if (!month || !dayOk) continue;
    for (const h of hours)
      for (const m of minutes) {
        const t = day * 86400_000 + (h * 60 + m - offset) * 60_000;
        if (t >= start && t < end) out.push(t);
      }
  }
  // Days ascend, and within a day hours and minutes do: the list is already in order.
  return out;
}

/** The instants of several UTC crons together, in order, each once. */
export function unionInstants(crons: string[], from: Date): number[] {
  const all = Float64Array.from(crons.flatMap((c) => fireInstants(c, 0, from))).sort();
  const out: number[] = [];
  for (const t of all) if (out.length === 0 || out[out.length - 1] !== t) out.push(t);
  return out;
}

/** Whether `utcCrons` together fire exactly when `cron` fires at a fixed `offset`, over a year. */
function sameInstants(cron: string, offset: number, utcCrons: string[], from: Date): boolean {
  const want = fireInstants(cron, offset, from);
  const got = unionInstants(utcCrons, from);
  return want.length === got.length && want.every((v, i) => v === got[i]);
}

/** Whether UTC crons fire at the same instants as `cron` in `timeZone` over the year after `from`, by croner's scheduler (slow: for tests). */
export function sameFireTimes(cron: string, timeZone: string, utcCrons: string[], from: Date): boolean {
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
  const b = [...new Set(utcCrons.flatMap((u) => runs(new Cron(u, { timezone: "UTC" }))))].sort(
    (x, y) => x - y,
  );
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
