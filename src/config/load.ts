import fs from "node:fs";
import path from "node:path";
import { parseDocument } from "yaml";
import { ConfigError } from "../errors.js";
import type { CacheFolder } from "../kinds/kind.js";
import { checkCachePaths } from "./cache-paths.js";
import { formatIssues } from "./config-issues.js";
import { interpolate } from "./interpolate.js";

export { checkCachePaths } from "./cache-paths.js";

import type { ProfileSpec } from "./profile-schema.js";
import { configSchema, type ParsedConfig, type RawConfig } from "./schema.js";
import { resolveStore, type StoreConfig, storeFromText } from "./store-config.js";

/** A configured cache: kcache.yml's `caches:` entry, or one actions/cache-style path line. */
export type CacheConfig = CacheFolder;

export interface Config {
  /** The file it came from, or "(defaults)". */
  source: string;
  caches: CacheConfig[];
  store: StoreConfig;
  key: { prefix: string; restorePrefixes: string[]; defaultBranch: string | undefined };
  save: {
    maxChain: number;
    maxDeadShare: number;
    packBytes: number;
    compressionLevel: number;
    keepUnusedRuns: number;
    keepUnusedDays: number;
    maxBytes: number | null;
  };
  stack: { python: string; pins: Record<string, string> };
  profiles: Record<string, ProfileSpec>;
  github: { action: string };
}

export const DEFAULT_CONFIG_FILE = "kcache.yml";

/** The configuration used when there is no kcache.yml: one Triton cache where Triton keeps it. */
export function defaultRawConfig(): RawConfig {
  return {
    caches: [
      {
        name: "triton",
        kind: "triton",
        path: "${TRITON_CACHE_DIR:-~/.triton/cache}",
        env: "TRITON_CACHE_DIR",
      },
    ],
  };
}

/**
 * Loads kcache.yml: an explicit path must exist; otherwise $KCACHE_CONFIG, then ./kcache.yml, then
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
  const explicit = opts.file ?? env.KCACHE_CONFIG;
  let file: string | undefined;
  if (explicit) {
    file = path.resolve(cwd, explicit);
    if (!fs.existsSync(file)) {
      throw new ConfigError(`${file}: no such config file; pass --config with an existing kcache.yml`);
    }
    if (!fs.statSync(file).isFile()) {
      throw new ConfigError(
        `${file}: is a folder, not a config file; pass --config the path of a kcache.yml`,
      );
    }
  } else if (fs.existsSync(path.join(cwd, DEFAULT_CONFIG_FILE))) {
    file = path.join(cwd, DEFAULT_CONFIG_FILE);
  }
  const raw = file ? readYaml(file) : defaultRawConfig();
  return resolveConfig(raw, file ?? "(defaults)", env, cwd, {
    store: opts.store,
    cachesUnused: opts.cachesUnused,
  });
}

function readYaml(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(
      `${file}: cannot be read (${(e as NodeJS.ErrnoException).code}); check its permissions`,
    );
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    const where = e?.linePos?.[0] ? `:${e.linePos[0].line}:${e.linePos[0].col}` : "";
    throw new ConfigError(
      `${file}${where}: invalid YAML: ${e?.message.split("\n")[0]}; fix the syntax there`,
    );
  }
  return doc.toJS() ?? {};
}

/** Validates a parsed document and expands its paths; exported for tests and for callers with an object. */
export function resolveConfig(
  raw: unknown,
  source: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  overrides: { store?: string; cachesUnused?: boolean } = {},
): Config {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(formatIssues(source, parsed.error.issues, configSchema));
  const cfg: ParsedConfig = parsed.data;

  const expand = (value: string, field: string): string => {
    const r = interpolate(value, env);
    if (!r.ok) {
      throw new ConfigError(
        `${source}: ${field}: environment variable ${r.missing} is not set; set it, or give a default as \${${r.missing}:-/some/path}`,
      );
    }
    return r.value;
  };

  // Each kept cache with its index in kcache.yml, which errors name (a left-out cache shifts none).
  const kept = cfg.caches
    .map((c, i) => ({ c, i }))
    .filter(({ c }) => !overrides.cachesUnused || interpolate(c.path, env).ok);
  const caches = kept.map(({ c, i }) => ({
    name: c.name,
    kind: c.kind,
    path: path.resolve(cwd, expand(c.path, `caches[${i}].path`)),
    env: c.env ?? DEFAULT_ENV[c.kind],
    trustLocal: c["trust-local"],
    isolate: c.isolate,
    maxSize: c["max-size"] ?? null,
  }));
  checkCachePaths(caches, (j) => `${source}: caches[${kept[j]?.i}].path`, env, cwd);
  let store: StoreConfig;
  try {
    store =
      overrides.store !== undefined
        ? storeFromText(overrides.store, "store", env, cwd)
        : resolveStore(cfg.store, env, cwd, expand);
  } catch (e) {
    if (e instanceof ConfigError && !e.message.startsWith(source))
      throw new ConfigError(`${source}: ${e.message}`);
    throw e;
  }

  const pins: Record<string, string> = {};
  for (const [k, v] of Object.entries(cfg.stack.pins)) pins[k] = expand(v, `stack.pins.${k}`);

  return {
    source,
    caches,
    store,
    key: {
      prefix: cfg.key.prefix,
      restorePrefixes: cfg.key["restore-prefixes"],
      defaultBranch: cfg.key["default-branch"],
    },
    save: {
      maxChain: cfg.save["max-chain"],
      maxDeadShare: cfg.save["max-dead-share"],
      packBytes: cfg.save["pack-mib"] * 1024 * 1024,
      compressionLevel: cfg.save["compression-level"],
      keepUnusedRuns: cfg.save["keep-unused"].runs,
      keepUnusedDays: cfg.save["keep-unused"].days,
      maxBytes: cfg.save["max-bytes"] ?? null,
    },
    stack: { python: cfg.stack.python, pins },
    // Interpolated when a profile runs (expandProfile), with that run's environment: a variable only
    // one profile's run sets must not break `kcache stack` or another profile.
    profiles: cfg.profiles,
    github: cfg.github,
  };
}

/** The variable that points a job at a cache of each kind, unless the cache names its own. */
const DEFAULT_ENV: Partial<Record<string, string>> = {
  triton: "TRITON_CACHE_DIR",
  inductor: "TORCHINDUCTOR_CACHE_DIR",
};

/** The profile with its caches and prefix applied to the configuration. */
export function profileConfig(
  config: Config,
  name: string,
  env: NodeJS.ProcessEnv,
): { profile: ProfileSpec; config: Config } {
  const raw = config.profiles[name];
  if (!raw) {
    const known = Object.keys(config.profiles);
    throw new ConfigError(
      `${config.source}: no profile "${name}"${known.length ? `; profiles are ${known.map((k) => `"${k}"`).join(", ")}` : "; add one under profiles:"}`,
    );
  }
  const profile = expandProfile(config.source, name, raw, env);
  const caches = profile.caches
    ? config.caches.filter((c) => profile.caches?.includes(c.name))
    : config.caches;
  return {
    profile,
    config: { ...config, caches, key: { ...config.key, prefix: profile.prefix ?? config.key.prefix } },
  };
}

/**
 * Expands ${VAR} in one profile's paths (workdir, compare file, check files) with the environment its
 * run has: `env` plus the profile's own `env:`. Commands are left to the shell.
 */
export function expandProfile(
  source: string,
  name: string,
  p: ProfileSpec,
  env: NodeJS.ProcessEnv,
): ProfileSpec {
  const runEnv = { ...env, ...p.env };
  const expand = (value: string, field: string): string => {
    const r = interpolate(value, runEnv);
    if (!r.ok) {
      throw new ConfigError(
        `${source}: ${field}: environment variable ${r.missing} is not set; set it (in the profile's env: too), or give a default as \${${r.missing}:-/some/path}`,
      );
    }
    return r.value;
  };
  {
    const at = `profiles.${name}`;
    return {
      ...p,
      workdir: p.workdir === undefined ? undefined : expand(p.workdir, `${at}.workdir`),
      compare: p.compare ? { ...p.compare, file: expand(p.compare.file, `${at}.compare.file`) } : undefined,
      checks: p.checks.map((c, i) => {
        const copy = { ...c } as Record<string, unknown>;
        for (const field of ["file", "a", "b", "baseline", "workdir"]) {
          const v = copy[field];
          if (typeof v === "string") copy[field] = expand(v, `${at}.checks[${i}].${field}`);
        }
        return copy as typeof c;
      }),
    };
  }
}
