import fs from "node:fs";
import path from "node:path";
import { ResultFileError } from "./check.js";

export type ResultRecord = Record<string, unknown>;

/** Reads a JSON result file and returns the records at `recordsPath` (dotted), or the file's array or its "results". */
export function readRecords(file: string, recordsPath: string | undefined): ResultRecord[] {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    throw new ResultFileError(
      `${file}: not found; the command that writes it did not run or wrote elsewhere`,
    );
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ResultFileError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  if (recordsPath === ".") {
    if (doc === null || typeof doc !== "object" || Array.isArray(doc))
      throw new ResultFileError(`${file}: records: "." needs a JSON object at the top level`);
    return [doc as ResultRecord];
  }
  const at = recordsPath ? getPath(doc, recordsPath) : Array.isArray(doc) ? doc : getPath(doc, "results");
  if (!Array.isArray(at)) {
    throw new ResultFileError(
      `${file}: no array of records at ${recordsPath ?? '"results"'}; set records: to the field that holds them`,
    );
  }
  return at.filter((r): r is ResultRecord => typeof r === "object" && r !== null && !Array.isArray(r));
}

/** The value at a dotted path ("timing.median_ms", "results.0.op"), or undefined. */
export function getPath(value: unknown, dotted: string): unknown {
  let v: unknown = value;
  for (const part of dotted.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** A record's identity on the key fields, printed the way people write it: "mode=fwd B=1 T=4096". */
export function identity(record: ResultRecord, key: string[]): string {
  return key.map((k) => `${k}=${canonical(getPath(record, k))}`).join(" ");
}

/** Values compare as text so 1 and "1" are one value, as they are to a person reading a table. */
export function canonical(v: unknown): string {
  if (v === undefined) return "(missing)";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** Resolves a check's file against the working directory of the run. */
export function resolveIn(dir: string, file: string): string {
  return path.resolve(dir, file);
}
