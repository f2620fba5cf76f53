const UNITS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** Milliseconds in "90s", "30m", "12h", "7d", "2w", or null when the text is not such a duration. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(text.trim());
  return m ? Number(m[1]) * (UNITS[m[2] as string] as number) : null;
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

/** Bytes in "500MB", "10GB", "2GiB", "1000000", or null when the text is not such a size. */
export function parseSize(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?$/i.exec(text.trim());
  return m ? Math.round(Number(m[1]) * (SIZES[(m[2] ?? "").toLowerCase()] as number)) : null;
}
