import { UsageError } from "../errors.js";

const UNITS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** Parses "90s", "30m", "12h", "7d", "2w" into milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(text.trim());
  if (!m) throw new UsageError(`${flag} ${text}: use a number and a unit, like 90s, 30m, 12h, 7d or 2w`);
  return Number(m[1]) * (UNITS[m[2] as string] as number);
}

const SIZES: Record<string, number> = {
  "": 1,
  k: 1e3,
  m: 1e6,
  g: 1e9,
  t: 1e12,
  ki: 1024,
  mi: 1024 ** 2,
  gi: 1024 ** 3,
  ti: 1024 ** 4,
};

/** Parses "500MB", "10GB", "2GiB", "1000000" into bytes. */
export function parseSize(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?$/i.exec(text.trim());
  if (!m) throw new UsageError(`${flag} ${text}: use a size like 500MB, 10GB or 2GiB`);
  return Math.round(Number(m[1]) * (SIZES[(m[2] ?? "").toLowerCase()] as number));
}
