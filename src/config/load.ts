import { parseDocument } from "yaml";
import * as z from "zod";
import { ConfigError } from "../errors.js";
import { formatIssues } from "./config-issues.js";
import { type Config, configFile, configText, defaultRawConfig, resolveParsed } from "./resolve.js";
import { configSchema, type ParsedConfig } from "./schema.js";

export { checkCachePaths } from "./cache-paths.js";
export {
  type CacheConfig,
  type Config,
  DEFAULT_CONFIG_FILE,
  defaultRawConfig,
  expandProfile,
  profileConfig,
} from "./resolve.js";

/**
 * Loads kcache.yml: YAML, then the schema (the CLI reaches this through config/validated-config.ts,
 * which keeps each valid answer); an explicit path must exist: an explicit path must exist; otherwise $KCACHE_CONFIG, then ./kcache.yml, then
 * the defaults. Every error names the file, the field and the fix.
 */
export function loadConfig(opts: {
  file?: string;
  cwd?: string;
  env: NodeJS.ProcessEnv;
  store?: string;
  /** The command touches no cache folder (ls, inspect, prune, stats): a cache whose path cannot be expanded here is left out. */
  cachesUnused?: boolean;
}): Config {
  const { env } = opts;
  const cwd = opts.cwd ?? process.cwd();
  const file = configFile({ file: opts.file, cwd, env });
  const source = file ?? "(defaults)";
  const parsed = parseConfig(file ? configText(file) : null, source);
  return resolveParsed(parsed, source, env, cwd, { store: opts.store, cachesUnused: opts.cachesUnused });
}

/** kcache.yml's text (null: the defaults) parsed and validated; a ConfigError naming `source` otherwise. */
export function parseConfig(text: string | null, source: string): ParsedConfig {
  return validate(text === null ? defaultRawConfig() : readYaml(text, source), source);
}

function readYaml(text: string, file: string): unknown {
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    const where = e?.linePos?.[0] ? `:${e.linePos[0].line}:${e.linePos[0].col}` : "";
    throw new ConfigError(
      `${file}${where}: invalid YAML: ${e?.message.split("\n")[0]}; fix the syntax there`,
    );
  }
  try {
    // yaml bounds what aliases may expand to (a "billion laughs" document): its error, the file's.
    return doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (e) {
    throw new ConfigError(
      `${file}: invalid YAML: ${(e as Error).message.split("\n")[0]}; kcache.yml needs no aliases that expand this far`,
    );
  }
}

function validate(raw: unknown, source: string): ParsedConfig {
  // One parse per command: zod's generated fast path would cost more to build than it saves.
  z.config({ jitless: true });
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(formatIssues(source, parsed.error.issues, configSchema, raw));
  return parsed.data;
}

/** Validates a parsed document and expands its paths; exported for tests and for callers with an object. */
export function resolveConfig(
  raw: unknown,
  source: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  overrides: { store?: string; cachesUnused?: boolean } = {},
): Config {
  return resolveParsed(validate(raw, source), source, env, cwd, overrides);
}
