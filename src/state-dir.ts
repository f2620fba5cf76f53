import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { readBoundedFile } from "./bounded-file.js";
import { makeFolders } from "./make-folders.js";

/** $KCACHE_STATE_DIR, else $RUNNER_TEMP/kcache-state on GitHub runners, else ~/.cache/kcache-state. */
export function stateDir(env: NodeJS.ProcessEnv): string {
  if (env.KCACHE_STATE_DIR) return env.KCACHE_STATE_DIR;
  if (env.RUNNER_TEMP) return path.join(env.RUNNER_TEMP, "kcache-state");
  return path.join(env.HOME || os.homedir(), ".cache", "kcache-state");
}

/**
 * Answers kept in the state folder so that later commands start sooner (the stack probes, a
 * validated kcache.yml; docs/storage-format.md). Each is only ever time saved: one that cannot be
 * read is asked again, and one that cannot be written costs the next command that time.
 */

/** The most a kept answer may be: a validated kcache.yml with many profiles is tens of kB. */
const MAX_KEPT_BYTES = 4 * 1024 * 1024;

/**
 * The kept JSON value in `file`, or undefined where there is none, or it is anything but a regular
 * file kcache wrote whole (readBoundedFile): a file over 4 MiB is never read, and one whose digest does
 * not match its value (hand-edited, garbled, written by an older kcache) is asked again rather than trusted.
 */
export function readKept(file: string): unknown {
  const read = readBoundedFile(file, MAX_KEPT_BYTES);
  if (!read || !("bytes" in read)) return undefined;
  try {
    const kept = JSON.parse(read.bytes.toString("utf8")) as { sha256?: unknown; value?: unknown };
    if (!kept || typeof kept !== "object" || typeof kept.sha256 !== "string") return undefined;
    return digestOf(kept.value) === kept.sha256 ? kept.value : undefined;
  } catch {
    return undefined;
  }
}

function digestOf(value: unknown): string {
  return createHash("sha256")
    .update(JSON.stringify(value) ?? "")
    .digest("hex");
}

/** Keeps `value` in `file` with its digest, whole or not at all (a temp file renamed in); a failure is ignored. */
export function keepAnswer(file: string, value: unknown): void {
  try {
    makeFolders(path.dirname(file));
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ sha256: digestOf(value), value }));
    fs.renameSync(tmp, file);
  } catch {
    // Kept only to save time.
  }
}

/**
 * Checks of a JSON value's shape, for what kcache reads back from the files it keeps here (the local
 * state between restore and save, a validated kcache.yml): such a file may have been edited by hand,
 * garbled or forged, and its value is taken for absent when it does not fit, never read into a crash
 * later. A check says whether the value has the types its readers rely on; it does not validate
 * values (a schema did that before the value was kept) and lets unknown fields pass.
 */
export type Shape = (v: unknown) => boolean;

/** A plain JSON object (not null, not an array). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export const str: Shape = (v) => typeof v === "string";
export const num: Shape = (v) => typeof v === "number" && Number.isFinite(v);
export const bool: Shape = (v) => typeof v === "boolean";
export const anyObject: Shape = isObject;

export const oneOf =
  (...values: readonly unknown[]): Shape =>
  (v) =>
    values.includes(v);
export const optional =
  (s: Shape): Shape =>
  (v) =>
    v === undefined || s(v);
export const nullable =
  (s: Shape): Shape =>
  (v) =>
    v === null || s(v);
export const either =
  (...shapes: Shape[]): Shape =>
  (v) =>
    shapes.some((s) => s(v));
export const arrayOf =
  (s: Shape): Shape =>
  (v) =>
    Array.isArray(v) && v.every(s);
export const nonEmpty =
  (s: Shape): Shape =>
  (v) =>
    Array.isArray(v) && v.length > 0 && v.every(s);
export const tuple =
  (...shapes: Shape[]): Shape =>
  (v) =>
    Array.isArray(v) && v.length === shapes.length && shapes.every((s, i) => s(v[i]));
/** An object whose every value fits `s` (a map by name). */
export const recordOf =
  (s: Shape): Shape =>
  (v) =>
    isObject(v) && Object.values(v).every(s);
/** An object whose named fields fit their shapes (absent ones are `undefined`: wrap them in `optional`). */
export const object =
  (fields: Record<string, Shape>): Shape =>
  (v) =>
    isObject(v) && Object.entries(fields).every(([k, s]) => s(Object.hasOwn(v, k) ? v[k] : undefined));
