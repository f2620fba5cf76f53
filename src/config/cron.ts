/**
 * Five-field cron expressions as GitHub's `schedule:` accepts them: numbers, `*`, lists, ranges and
 * steps, month names (JAN-DEC) and day names (SUN-SAT, 7 also Sunday). Anything else (croner's `L`,
 * `#`, `?`, seconds) is refused with the field named, as is a value out of its field's range.
 */
export interface CronField {
  /** The field's text as written. */
  text: string;
  /** The values it allows, sorted (Sunday is 0). */
  values: number[];
  /** Written as `*`: no restriction (what decides how day-of-month and day-of-week combine). */
  star: boolean;
}

export interface ParsedCron {
  minute: CronField;
  hour: CronField;
  dayOfMonth: CronField;
  month: CronField;
  dayOfWeek: CronField;
}

interface FieldSpec {
  name: string;
  lo: number;
  hi: number;
  names?: string[];
}

export const CRON_FIELDS: FieldSpec[] = [
  { name: "minute", lo: 0, hi: 59 },
  { name: "hour", lo: 0, hi: 23 },
  { name: "day-of-month", lo: 1, hi: 31 },
  {
    name: "month",
    lo: 1,
    hi: 12,
    names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
  },
  { name: "day-of-week", lo: 0, hi: 6, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] },
];

export class CronSyntaxError extends Error {}

/** Parses a cron expression; throws CronSyntaxError naming the field, the value and what is allowed. */
export function parseCron(expr: string): ParsedCron {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5 || parts[0] === "")
    throw new CronSyntaxError(
      `"${expr}" has ${parts[0] === "" ? 0 : parts.length} fields; a cron has 5: minute hour day-of-month month day-of-week`,
    );
  const fields = parts.map((p, i) => parseField(p, CRON_FIELDS[i] as FieldSpec, expr));
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields as [
    CronField,
    CronField,
    CronField,
    CronField,
    CronField,
  ];
  return { minute, hour, dayOfMonth, month, dayOfWeek };
}

function parseField(text: string, spec: FieldSpec, expr: string): CronField {
  const fail = (why: string): never => {
    throw new CronSyntaxError(`"${expr}": ${spec.name} field "${text}": ${why}`);
  };
  const max = spec.name === "day-of-week" ? 7 : spec.hi;
  const range = `${spec.lo}-${spec.hi}${spec.names ? ` or ${spec.names[0]}-${spec.names.at(-1)}` : ""}`;
  const value = (t: string): number => {
    if (/^\d+$/.test(t)) {
      const v = Number(t);
      if (v < spec.lo || v > max) fail(`${v} is out of range (${range})`);
      return v;
    }
    const i = spec.names?.indexOf(t.toUpperCase()) ?? -1;
    if (i < 0)
      fail(
        `"${t}" is not a ${spec.names ? "number or name" : "number"} (${range}); GitHub accepts only numbers${spec.names ? ", names" : ""}, *, lists, ranges and steps`,
      );
    return i + spec.lo;
  };
  const out = new Set<number>();
  for (const item of text.split(",")) {
    const m = /^([^/]+)(?:\/(\d+))?$/.exec(item);
    if (!m) fail(`"${item}" is not a value, a range or a step`);
    const [, base, stepText] = m as RegExpExecArray;
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) fail(`step ${stepText} must be at least 1`);
    let a: number;
    let b: number;
    if (base === "*") {
      a = spec.lo;
      b = spec.hi;
    } else if ((base as string).includes("-")) {
      const [x, y, ...rest] = (base as string).split("-");
      if (rest.length || !x || !y) fail(`"${base}" is not a range`);
      a = value(x as string);
      b = value(y as string);
      if (a > b) fail(`range ${base} runs backwards`);
    } else {
      a = value(base as string);
      b = stepText === undefined ? a : max;
    }
    for (let v = a; v <= b; v += step) out.add(spec.name === "day-of-week" && v === 7 ? 0 : v);
  }
  return { text, values: [...out].sort((x, y) => x - y), star: text === "*" };
}

/** A field's values written compactly: `*`, a step (`0-50/10`), else a list with ranges (`1-5,9`). */
export function formatField(values: number[], index: number): string {
  const spec = CRON_FIELDS[index] as FieldSpec;
  const sorted = [...new Set(values)].sort((a, b) => a - b);
  if (sorted.length === spec.hi - spec.lo + 1) return "*";
  const list = listForm(sorted);
  if (sorted.length >= 3) {
    const step = (sorted[1] as number) - (sorted[0] as number);
    const stepped = `${sorted[0]}-${sorted.at(-1)}/${step}`;
    if (step > 1 && sorted.every((v, i) => i === 0 || v - (sorted[i - 1] as number) === step))
      return stepped.length < list.length ? stepped : list;
  }
  return list;
}

function listForm(sorted: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && (sorted[j + 1] as number) === (sorted[j] as number) + 1) j++;
    parts.push(j - i >= 2 ? `${sorted[i]}-${sorted[j]}` : sorted.slice(i, j + 1).join(","));
    i = j + 1;
  }
  return parts.join(",");
}
