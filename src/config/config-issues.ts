import leven from "leven";
import type { z } from "zod";

type Issue = z.core.$ZodIssue;

/** The parts of zod's schema definitions that say which keys an object at some path takes. */
interface Def {
  type: string;
  innerType?: Schema;
  in?: Schema;
  out?: Schema;
  options?: Schema[];
  shape?: Record<string, Schema>;
  element?: Schema;
  valueType?: Schema;
}
interface Schema {
  _zod: { def: Def };
}

/** At most this many problems are listed; the rest are counted. */
const SHOWN = 10;

/**
 * Every problem zod found in a configuration, one line each, naming the file, the field and the fix.
 * A required field that is missing beside an unknown key spelt like it is one problem: "did you mean".
 */
export function formatIssues(source: string, issues: readonly Issue[], schema: unknown): string {
  if (!issues.length) return `${source}: invalid configuration`;
  const lines = issueLines(source, issues, schema);
  const more = lines.length - SHOWN;
  return [...lines.slice(0, SHOWN), ...(more > 0 ? [`${source}: and ${more} more`] : [])].join("\n");
}

/**
 * One line per problem. A list item that fits none of its shapes (a command or a parallel group) is
 * reported by the shape it came nearest to, each field named, not as "Invalid input". A required
 * top-level section that is missing goes last: the mistake the user made comes first.
 */
function issueLines(source: string, raw: readonly Issue[], schema: unknown): string[] {
  return linesOf(
    source,
    raw.flatMap((i) => nearestBranch(source, i, schema)),
    schema,
  );
}

/** A union's issues as those of its nearest branch (fewest lines), with their full paths. */
function nearestBranch(source: string, issue: Issue, schema: unknown): Issue[] {
  if (issue.code !== "invalid_union" || !Array.isArray(issue.errors) || issue.errors.length === 0)
    return [issue];
  const branches = issue.errors.map((b) =>
    b.flatMap((e) => nearestBranch(source, { ...e, path: [...issue.path, ...e.path] } as Issue, schema)),
  );
  const nearest = branches.reduce((a, b) =>
    linesOf(source, b, schema).length < linesOf(source, a, schema).length ? b : a,
  );
  return nearest.length ? nearest : [issue];
}

function linesOf(source: string, issues: readonly Issue[], schema: unknown): string[] {
  const last: string[] = [];
  const unknown = new Map<string, Set<string>>();
  for (const i of issues) if (i.code === "unrecognized_keys") unknown.set(fieldOf(i.path), new Set(i.keys));
  const lines: string[] = [];
  for (const issue of issues) {
    const typo = misspelt(issue, unknown);
    if (typo) {
      lines.push(
        `${source}: ${fieldOf(issue.path)}: missing, and "${typo}" is there: did you mean "${String(issue.path.at(-1))}"?`,
      );
      continue;
    }
    if (issue.code === "unrecognized_keys") {
      const left = issue.keys.filter((k) => unknown.get(fieldOf(issue.path))?.has(k));
      if (!left.length) continue;
      const known = keysAt(schema as Schema, issue.path);
      for (const k of left) {
        const near = closest(k, known);
        lines.push(
          near
            ? `${source}: ${fieldOf([...issue.path, k])}: not a setting kcache knows: did you mean "${near}"?`
            : formatIssue(source, { ...issue, keys: [k] }),
        );
      }
      continue;
    }
    // A required top-level section that is missing goes last: the mistake made comes first.
    if (issue.path.length === 1 && issue.code === "invalid_type" && /received undefined/.test(issue.message))
      last.push(formatIssue(source, issue));
    else lines.push(formatIssue(source, issue));
  }
  return [...lines, ...last];
}

/** The unknown key beside a missing required field that is spelt like it (taken out of `unknown`). */
function misspelt(issue: Issue, unknown: Map<string, Set<string>>): string | null {
  if (issue.code !== "invalid_type" || !/received undefined/.test(issue.message)) return null;
  const name = issue.path.at(-1);
  if (typeof name !== "string") return null;
  const siblings = unknown.get(fieldOf(issue.path.slice(0, -1)));
  if (!siblings) return null;
  const best = [...siblings].find((k) => closest(k, [name]) !== null) ?? null;
  if (best !== null) siblings.delete(best);
  return best;
}

/** The name in `names` spelt most like `word` (a third of its letters off at most), or null. */
function closest(word: string, names: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const n of names) {
    const d = leven(word.toLowerCase(), n.toLowerCase());
    if (d < bestDistance) {
      best = n;
      bestDistance = d;
    }
  }
  return best;
}

/** The keys an object at `path` of `schema` takes (every variant's, for unions). */
function keysAt(schema: Schema, path: readonly PropertyKey[]): string[] {
  const unwrap = (d: Def): Def[] => {
    if (d.innerType) return unwrap(d.innerType._zod.def);
    if (d.type === "pipe") return [d.in, d.out].flatMap((x) => (x ? unwrap(x._zod.def) : []));
    if (d.options) return d.options.flatMap((o) => unwrap(o._zod.def));
    return [d];
  };
  let defs = unwrap(schema._zod.def);
  for (const k of path) {
    defs = defs.flatMap((d) => {
      const next =
        typeof k === "number" ? d.element : d.type === "record" ? d.valueType : d.shape?.[String(k)];
      return next ? unwrap(next._zod.def) : [];
    });
  }
  return [...new Set(defs.flatMap((d) => (d.type === "object" && d.shape ? Object.keys(d.shape) : [])))];
}

function fieldOf(p: readonly PropertyKey[]): string {
  return p.length
    ? p.map((k, i) => (typeof k === "number" ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join("")
    : "(top level)";
}

function formatIssue(source: string, issue: Issue): string {
  let fix = "";
  let message = issue.message;
  switch (issue.code) {
    case "unrecognized_keys": {
      // zod's message names every unknown key of the object; this issue may carry only some.
      const keys = issue.keys.map((k) => `"${k}"`).join(", ");
      message = `Unrecognized key${issue.keys.length > 1 ? "s" : ""}: ${keys}`;
      fix = `; remove ${keys} or check its spelling`;
      break;
    }
    case "invalid_value":
      fix = `; use one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
      break;
    case "invalid_type":
      fix = `; expected ${issue.expected}`;
      break;
  }
  return `${source}: ${fieldOf(issue.path)}: ${message}${fix}`;
}
