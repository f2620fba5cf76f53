import fs from "node:fs";
import path from "node:path";
import { ConfigError } from "../errors.js";
import type { CacheFolder } from "../kinds/kind.js";
import { checkCachePaths } from "./cache-paths.js";
import { interpolate } from "./interpolate.js";
import type { ProfileSpec } from "./profile-schema.js";
import type { ParsedConfig, RawConfig } from "./schema.js";
import { resolveStore, type StoreConfig, storeFromText } from "./store-config.js";

/**
 * kcache.yml once validated: which file, and the configuration for this job's environment. Nothing
 * here parses YAML or loads the schema (config/load.ts does, and config/validated-config.ts keeps
 * what it found), so a command whose kcache.yml was validated before starts without either.
 */

/** A configured cache: kcache.yml's `caches:` entry, or one actions/cache-style path line. */
export type CacheConfig = CacheFolder;

export interface Config {
  /** The file it came from, or "(defaults)". */
  source: string;
  caches: CacheConfig[];
  store: StoreConfig;
  key: {
    prefix: string;
    restorePrefixes: string[];
    defaultBranch: string | undefined;
    /** A declared scope (key.scope, or --scope over it) and where it was declared. */
    scope?: { scope: string; source: string };
  };
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
 * Which kcache.yml a command uses: an explicit path (--config, else $KCACHE_CONFIG), which must exist;
 * else ./kcache.yml; else none (the defaults). Every error names the file and the fix.
 */
export function configFile(opts: { file?: string; cwd: string; env: NodeJS.ProcessEnv }): string | undefined {
  const explicit = opts.file ?? opts.env.KCACHE_CONFIG;
  if (explicit) {
    const file = path.resolve(opts.cwd, explicit);
    const wrong = notAConfigFile(file);
    if (wrong) throw new ConfigError(`${file}: ${wrong}`);
    return file;
  }
  const here = path.join(opts.cwd, DEFAULT_CONFIG_FILE);
  if (fs.existsSync(here)) return here;
  // Node gives a working folder whose path is not UTF-8 with U+FFFD in place of the bad bytes: a path
  // that names nothing. Its kcache.yml, there by a relative name, would be passed over for the defaults.
  if (opts.cwd.includes("\uFFFD") && fs.existsSync(DEFAULT_CONFIG_FILE))
    throw new ConfigError(
      `${opts.cwd}: the working folder's path is not valid UTF-8, so kcache cannot name its kcache.yml or the files under it; run kcache from a folder whose path is UTF-8 (rename or link it)`,
    );
  return undefined;
}

/** What keeps `file` from being read as a kcache.yml, with the fix; null when it is a file (or a link to one). */
function notAConfigFile(file: string): string | null {
  const fix = "pass --config (or KCACHE_CONFIG) the path of a kcache.yml";
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const link = fs.lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink();
    if (code === "ELOOP") return `is a link that leads back to itself (a loop of links); ${fix}`;
    if (code === "ENOENT" && link)
      return `is a link to ${fs.readlinkSync(file)}, which does not exist; ${fix}`;
    if (code === "ENOENT" || code === "ENOTDIR") return `no such config file; ${fix}`;
    return `cannot be read (${code}); check its permissions, or ${fix}`;
  }
  if (st.isFile()) return null;
  const what = st.isDirectory()
    ? "a folder"
    : st.isFIFO()
      ? "a FIFO (a named pipe)"
      : st.isSocket()
        ? "a socket"
        : "a device";
  return `is ${what}, not a config file; ${fix}`;
}

/** kcache.yml's text; a ConfigError naming the file when it cannot be read. */
export function configText(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(
      `${file}: cannot be read (${(e as NodeJS.ErrnoException).code}); check its permissions`,
    );
  }
}

/** A validated kcache.yml (config/load.ts validates) with its paths expanded for this job's environment. */
export function resolveParsed(
  cfg: ParsedConfig,
  source: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
  overrides: { store?: string; cachesUnused?: boolean } = {},
): Config {
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
    lazy: c.restore === "lazy",
  }));
  for (const { c, i } of kept) checkLazy(c, `${source}: caches[${i}]`);
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
      ...(cfg.key.scope !== undefined
        ? { scope: { scope: cfg.key.scope, source: `${source}: key.scope` } }
        : {}),
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
export const DEFAULT_ENV: Partial<Record<string, string>> = {
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

/** `restore: lazy` serves lookups through Triton's cache manager: refused, with the fix, on other kinds. */
function checkLazy(c: { name: string; kind: string; restore: string }, field: string): void {
  if (c.restore !== "lazy" || c.kind === "triton") return;
  const why =
    c.kind === "inductor"
      ? "Inductor's readers open files directly"
      : "a dir cache has no lookups kcache sees";
  throw new ConfigError(
    `${field}.restore: lazy works for kind: triton only (Triton looks each entry up through a cache manager kcache can serve; ${why}): remove restore: lazy from ${c.name}, or set restore: eager`,
  );
}
