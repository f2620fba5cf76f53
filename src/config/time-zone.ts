import leven from "leven";

/** Whether `name` is an IANA time zone name this Node knows (GitHub's schedule `timezone:` takes those). */
export function isTimeZone(name: string): boolean {
  if (name !== "UTC" && !name.includes("/")) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Why `name` is not a time zone, with the nearest one it may be a misspelling of; null when it is one. */
export function timeZoneProblem(name: string): string | null {
  if (isTimeZone(name)) return null;
  let near: string | null = null;
  let best = 4;
  for (const zone of Intl.supportedValuesOf("timeZone")) {
    const d = leven(name.toLowerCase(), zone.toLowerCase());
    if (d < best) {
      best = d;
      near = zone;
    }
  }
  return `"${name}" is not an IANA time zone name${near ? `: did you mean "${near}"?` : " (e.g. Asia/Shanghai, Europe/Berlin, UTC)"}`;
}
