import leven from "leven";
import { globalRegistry, type z } from "zod";
import { evidentIssues, valueAt } from "./union-branch.js";

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
  values?: unknown[];
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
export function formatIssues(
  source: string,
  issues: readonly Issue[],
  schema: unknown,
  input?: unknown,
): string {
  if (!issues.length) return `${source}: invalid configuration`;
  const lines = issueLines(source, issues, schema, input);
  const more = lines.length - SHOWN;
  return [...lines.slice(0, SHOWN), ...(more > 0 ? [`${source}: and ${more} more`] : [])].join("\n");
}

/**
 * One line per problem. A value that fits none of a union's shapes (a command or a parallel group)
 * is reported by the shape the user evidently meant (union-branch.ts), each field named, not as
 * "Invalid input". A required top-level section that is missing goes last: the mistake the user
 * made comes first.
 */
function issueLines(source: string, raw: readonly Issue[], schema: unknown, input: unknown): string[] {
  const count = (b: Issue[]) => linesOf(source, b, schema, input).length;
  return linesOf(
    source,
    raw.flatMap((i) => evidentIssues(i, input, count)),
    schema,
    input,
  );
}

function linesOf(source: string, issues: readonly Issue[], schema: unknown, input: unknown): string[] {
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
      const shapes = shapesAt(schema as Schema, issue.path);
      const known = [...new Set(shapes.flatMap((o) => Object.keys(o._zod.def.shape ?? {})))];
      for (const k of left) {
        // A setting of another of the union's shapes (an S3 store's bucket): which one takes it.
        const owners = shapes.filter((o) => o._zod.def.shape?.[k]).map(shapeName);
        const near = owners.length ? null : closest(k, known);
        const field = `${source}: ${fieldOf([...issue.path, k])}`;
        if (owners.length)
          lines.push(`${field}: only ${owners.join(" or ")} takes "${k}"; ${fixOwner(owners)}`);
        else if (near) lines.push(`${field}: not a setting kcache knows: did you mean "${near}"?`);
        else lines.push(formatIssue(source, { ...issue, keys: [k] }, input));
      }
      continue;
    }
    // A required top-level section that is missing goes last: the mistake made comes first.
    if (issue.path.length === 1 && issue.code === "invalid_type" && /received undefined/.test(issue.message))
      last.push(formatIssue(source, issue, input));
    else lines.push(formatIssue(source, issue, input));
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

/** The object shapes a value at `path` of `schema` may take (every variant's, for unions). */
function shapesAt(schema: Schema, path: readonly PropertyKey[]): Schema[] {
  const unwrap = (s: Schema): Schema[] => {
    const d = s._zod.def;
    if (d.innerType) return unwrap(d.innerType);
    if (d.type === "pipe") return [d.in, d.out].flatMap((x) => (x ? unwrap(x) : []));
    if (d.options) return d.options.flatMap(unwrap);
    return [s];
  };
  let shapes = unwrap(schema);
  for (const k of path) {
    shapes = shapes.flatMap((s) => {
      const d = s._zod.def;
      const next =
        typeof k === "number" ? d.element : d.type === "record" ? d.valueType : d.shape?.[String(k)];
      return next ? unwrap(next) : [];
    });
  }
  return [...new Set(shapes.filter((s) => s._zod.def.type === "object" && s._zod.def.shape))];
}

/** A shape by its fixed `type` ("type: s3"), else its title in the schema ("a parallel group"). */
function shapeName(shape: Schema): string {
  const type = shape._zod.def.shape?.type;
  const literal = type && literalOf(type);
  if (literal !== undefined) return `type: ${literal}`;
  const title = globalRegistry.get(shape as never)?.title;
  return title ? `a ${title}` : "another kind of item";
}

function literalOf(s: Schema): string | undefined {
  const d = s._zod.def;
  if (d.innerType) return literalOf(d.innerType);
  return d.type === "literal" && d.values?.length === 1 ? String(d.values[0]) : undefined;
}

function fixOwner(owners: string[]): string {
  const type = owners.find((o) => o.startsWith("type: "));
  return type ? `set ${type}, or remove it` : "remove it, or what does not go with it";
}

function fieldOf(p: readonly PropertyKey[]): string {
  return p.length
    ? p.map((k, i) => (typeof k === "number" ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join("")
    : "(top level)";
}

function formatIssue(source: string, issue: Issue, input: unknown): string {
  const field = `${source}: ${fieldOf(issue.path)}`;
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
      // A literal (a store's type) says its one value in zod's message already.
      if (issue.values.length > 1)
        fix = `; use one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
      break;
    case "invalid_type":
      if (valueAt(input, issue.path) === undefined && /received undefined/.test(issue.message))
        return `${field}: missing; expected ${issue.expected}`;
      // zod's message says what was expected already ("expected string, received number").
      if (!message.includes(`expected ${issue.expected}`)) fix = `; expected ${issue.expected}`;
      break;
    case "invalid_union":
      // A discriminated union (checks, by type) whose `type` is missing or names no shape.
      if ("options" in issue && Array.isArray(issue.options))
        return discriminator(field, issue.path, issue.options, input);
      break;
  }
  return `${field}: ${message}${fix}`;
}

function discriminator(field: string, path: PropertyKey[], values: unknown[], input: unknown): string {
  const options = values.map(String);
  const given = valueAt(input, path);
  const list = options.map((o) => `"${o}"`).join(", ");
  if (given === undefined) return `${field}: missing; use one of ${list}`;
  const near = typeof given === "string" ? closest(given, options) : null;
  return `${field}: ${JSON.stringify(given)} is not one of ${list}${near ? `: did you mean "${near}"?` : ""}`;
}
