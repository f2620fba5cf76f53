import leven from "leven";

/** The zone Node resolves `name` to (its canonical name), or null where it knows none. */
function resolvedZone(name: string): string | null {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/**
 * Whether `name` is an IANA time zone name this Node knows (GitHub's schedule `timezone:` takes those),
 * spelt as the database spells it: Node takes any case, Java (Jenkins's TZ=) and others do not. A name
 * is its canonical one, or an alias (US/Eastern) written as IANA writes names, each part capitalised.
 */
export function isTimeZone(name: string): boolean {
  if (name !== "UTC" && !name.includes("/")) return false;
  const resolved = resolvedZone(name);
  if (resolved === null) return false;
  if (resolved === name) return true;
  if (resolved.toLowerCase() === name.toLowerCase()) return false;
  return name.split("/").every((part) => /^[A-Z]/.test(part));
}

/** Why `name` is not a time zone, with the nearest one it may be a misspelling of; null when it is one. */
export function timeZoneProblem(name: string): string | null {
  if (isTimeZone(name)) return null;
  const resolved = resolvedZone(name);
  if (resolved !== null)
    return `"${name}" is spelt in another case than the time zone database's: write "${resolved}" (Jenkins's Java and other schedulers take names as spelt)`;
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
