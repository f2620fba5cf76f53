import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { keepAnswer, readKept, stateDir } from "../state-dir.js";
import { VERSION } from "../version.js";
import type { ParsedConfig } from "./schema.js";

/**
 * kcache.yml validated once per text, not once per command: parsing its YAML and loading and running
 * its schema cost a command tens of milliseconds before it did anything (a restore, the job's
 * commands and the save each read the same file). A valid answer is kept in the state folder, named
 * by a digest of the exact text, the file's path and this kcache's build; an edit, another path or
 * another kcache finds none and validates again. Invalid files are never kept: their error comes
 * from config/load.ts, with the file, the field and the fix, every time. YAML and the schema are
 * loaded only when the answer is not kept (a lazy import).
 */
export async function validatedConfig(
  file: string | undefined,
  text: string | null,
  env: NodeJS.ProcessEnv,
  opts: { keep?: boolean } = {},
): Promise<ParsedConfig> {
  const kept = keptFile(file, text, env);
  const found = kept ? keptConfig(kept) : null;
  if (found) return found;
  const { parseConfig } = await import("./load.js");
  const parsed = parseConfig(text, file ?? "(defaults)");
  // Commands that write nothing on this machine (ls, prune, ...) use a kept answer but keep none.
  if (kept && opts.keep !== false) keep(kept, parsed);
  return parsed;
}

/** This kcache's build: its version and the file this code runs from (rebuilt: another size or time). */
function build(): string {
  const self = fileURLToPath(import.meta.url);
  const st = fs.statSync(self, { throwIfNoEntry: false, bigint: true });
  return `${VERSION}\0${self}\0${st?.size ?? ""}\0${st?.mtimeNs ?? ""}`;
}

function keptFile(file: string | undefined, text: string | null, env: NodeJS.ProcessEnv): string | null {
  try {
    const id = createHash("sha256")
      .update(`${build()}\0${file ?? "(defaults)"}\0${text ?? "(defaults)"}`)
      .digest("hex")
      .slice(0, 32);
    return path.join(stateDir(env), "config", `${id}.json`);
  } catch {
    return null;
  }
}

/** A kept answer, or null where there is none or it is not one kcache wrote whole (then validated again). */
function keptConfig(file: string): ParsedConfig | null {
  const kept = readKept(file) as Partial<ParsedConfig> | null | undefined;
  return kept && Array.isArray(kept.caches) && kept.key && kept.save && kept.stack && kept.profiles
    ? (kept as ParsedConfig)
    : null;
}

/** Kept only when JSON gives back exactly what the schema gave (a plain object): else validated each time. */
function keep(file: string, parsed: ParsedConfig): void {
  if (isDeepStrictEqual(JSON.parse(JSON.stringify(parsed)), withoutUndefined(parsed)))
    keepAnswer(file, parsed);
}

/** The value as JSON keeps it: object fields that are undefined are left out. */
function withoutUndefined(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutUndefined);
  if (v === null || typeof v !== "object") return v;
  if (Object.getPrototypeOf(v) !== Object.prototype) return v; // a class instance: never equal to JSON's
  return Object.fromEntries(
    Object.entries(v)
      .filter(([, x]) => x !== undefined)
      .map(([k, x]) => [k, withoutUndefined(x)]),
  );
}
