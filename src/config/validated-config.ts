import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { CACHE_KIND_NAMES } from "../kinds/kind.js";
import {
  anyObject,
  arrayOf,
  bool,
  either,
  keepAnswer,
  nonEmpty,
  num,
  object,
  oneOf,
  optional,
  readKept,
  recordOf,
  type Shape,
  stateDir,
  str,
} from "../state-dir.js";
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

/**
 * A kept answer, or null where there is none, or it is not one kcache wrote whole, or its value does
 * not have the shape the commands read (a forged or hand-edited answer whose digest was made to
 * match): then kcache.yml itself is validated again, and its error, if any, is the schema's.
 */
function keptConfig(file: string): ParsedConfig | null {
  const kept = readKept(file);
  return CONFIG_SHAPE(kept) ? (kept as ParsedConfig) : null;
}

/**
 * Kept only when JSON gives back exactly what the schema gave (a plain object) and the shape check
 * takes it (so a check behind the schema costs time, never a wrong answer): else validated each time.
 */
function keep(file: string, parsed: ParsedConfig): void {
  if (isDeepStrictEqual(JSON.parse(JSON.stringify(parsed)), withoutUndefined(parsed)) && CONFIG_SHAPE(parsed))
    keepAnswer(file, parsed);
}

/**
 * What the commands read of a validated kcache.yml, by type (schema.ts and profile-schema.ts say
 * what each field means and bound its values; these are their outputs, defaults filled in). Loading
 * the schema to check a kept answer would cost what keeping it saves (~100 ms for zod alone).
 */
const strings = arrayOf(str);
const env = recordOf(str);
const command = object({
  name: str,
  run: str,
  env,
  workdir: optional(str),
  timeout: optional(str),
  devices: optional(strings),
  source: optional(strings),
});
const group = object({ name: str, parallel: arrayOf(command), devices: optional(strings) });
const CHECK_TYPES = ["coverage", "finite-positive", "values", "threshold", "allclose", "agree", "command"];
const check = object({
  type: oneOf(...CHECK_TYPES),
  severity: oneOf("error", "warn"),
  name: optional(str),
  ...Object.fromEntries(
    ["file", "records", "a", "b", "run", "field", "baseline"].map((f) => [f, optional(str)]),
  ),
  key: optional(strings),
  fields: optional(strings),
  expect: optional(anyObject),
  env: optional(env),
});
const profile = object({
  prefix: optional(str),
  caches: optional(strings),
  env,
  source: strings,
  workdir: optional(str),
  commands: nonEmpty(either(group, command)),
  checks: arrayOf(check),
  "continue-on-error": bool,
  save: oneOf("on-success", "never"),
  expect: oneOf("any", "warm"),
  "on-unexpected-compile": oneOf("warn", "fail"),
  github: optional(anyObject),
  compare: optional(object({ file: str, key: strings, metrics: strings, threshold: num })),
  benchmark: bool,
  autotune: optional(oneOf("pinned", "fresh", "any")),
  "autotune-env": strings,
  "autotune-salt": oneOf("none", "package"),
  "restore-revisions": strings,
});
const store: Shape = either(
  object({ type: oneOf("local"), path: optional(str), live: bool }),
  object({
    type: oneOf("s3"),
    bucket: str,
    prefix: str,
    region: optional(str),
    endpoint: optional(str),
    live: bool,
  }),
  object({ type: oneOf("gha"), timeout: optional(str), "idle-timeout": optional(str), live: optional(bool) }),
);
const CONFIG_SHAPE: Shape = object({
  caches: nonEmpty(
    object({
      name: str,
      kind: oneOf(...CACHE_KIND_NAMES),
      path: str,
      env: optional(str),
      "trust-local": bool,
      isolate: bool,
      "max-size": optional(num),
      restore: oneOf("eager", "lazy"),
    }),
  ),
  store: optional(store),
  key: object({
    prefix: str,
    "restore-prefixes": strings,
    "default-branch": optional(str),
    scope: optional(str),
  }),
  save: object({
    "max-chain": num,
    "max-dead-share": num,
    "pack-mib": num,
    "compression-level": num,
    "keep-unused": object({ runs: num, days: num }),
    "max-bytes": optional(num),
  }),
  stack: object({ python: str, pins: recordOf(str) }),
  github: object({ action: str }),
  profiles: recordOf(profile),
});

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
