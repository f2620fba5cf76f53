import type { z } from "zod";

type Issue = z.core.$ZodIssue;

/**
 * A value that fits none of a union's shapes (a command or a parallel group; a local, S3 or GitHub
 * store; a string or a list) is reported by the shape the user evidently meant, judged by what they
 * wrote, not by which shape happens to list fewest problems: a command with `name` and no `run` was
 * reported as a group lacking `parallel`, a problem the user did not have. In order:
 *  1. a shape the value contradicts is the least meant: the value is of another type (an object
 *     where a string goes), or a key the user wrote has a value the shape fixes otherwise (type: gha
 *     written, and the S3 store's type is s3);
 *  2. then the shape that knows more of the keys the user wrote (fewer unknown to it);
 *  3. then the one with fewer problems, then the union's own order (the common shape first).
 * When the value is of a type no shape takes, one problem says every type that would do.
 */
export function evidentIssues(issue: Issue, input: unknown, lines: (issues: Issue[]) => number): Issue[] {
  if (issue.code !== "invalid_union" || !Array.isArray(issue.errors) || issue.errors.length === 0)
    return [issue];
  // A union whose schema says what to write (a required install line: which command) says it itself.
  if (issue.message !== "Invalid input") return [issue];
  const here = issue.path;
  const branches = issue.errors.map((b) =>
    b.flatMap((e) => evidentIssues({ ...e, path: [...here, ...e.path] } as Issue, input, lines)),
  );
  const wrongType = (b: Issue[]) => b.find((e) => e.code === "invalid_type" && samePath(e.path, here));
  const mismatches = branches.map(wrongType);
  if (mismatches.every((m) => m !== undefined)) return [anyOf(here, mismatches as Issue[])];
  const value = valueAt(input, here);
  const rank = (b: Issue[]) => [
    wrongType(b) || b.some((e) => contradicts(e, here, value)) ? 1 : 0,
    b.reduce((n, e) => n + (e.code === "unrecognized_keys" && samePath(e.path, here) ? e.keys.length : 0), 0),
    lines(b),
  ];
  let best = 0;
  for (let i = 1; i < branches.length; i++)
    if (before(rank(branches[i] as Issue[]), rank(branches[best] as Issue[]))) best = i;
  const chosen = branches[best] as Issue[];
  return chosen.length ? chosen : [issue];
}

/** The value at `path` of the parsed YAML, or undefined. */
export function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/** A key the user wrote, right under the union, that this shape fixes to another value (`type: s3`). */
function contradicts(e: Issue, here: readonly PropertyKey[], value: unknown): boolean {
  if (e.code !== "invalid_value" || e.values.length !== 1) return false;
  if (e.path.length !== here.length + 1 || !samePath(e.path.slice(0, -1), here)) return false;
  return valueAt(value, e.path.slice(-1)) !== undefined;
}

/** One problem for a value no shape's type takes: "expected string or list of strings". */
function anyOf(path: PropertyKey[], mismatches: Issue[]): Issue {
  const expected = [...new Set(mismatches.map((m) => (m.code === "invalid_type" ? m.expected : "")))];
  const received = /received (\w+)/.exec(mismatches[0]?.message ?? "")?.[1] ?? "something else";
  return {
    code: "invalid_type",
    expected: expected.join(" or ") as "string",
    path,
    message: `Invalid input: expected ${expected.join(" or ")}, received ${received}`,
  } as Issue;
}

function before(a: number[], b: number[]): boolean {
  for (let i = 0; i < a.length; i++)
    if ((a[i] as number) !== (b[i] as number)) return (a[i] as number) < (b[i] as number);
  return false;
}

function samePath(a: readonly PropertyKey[], b: readonly PropertyKey[]): boolean {
  return a.length === b.length && a.every((k, i) => k === b[i]);
}
