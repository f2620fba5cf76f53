import path from "node:path";
import { Strictness } from "../cache/faults.js";
import type { JobContext } from "../cache/job-context.js";
import { stateDir, stateFile } from "../cache/local-state.js";
import { persistentFolderOf } from "../cache/persistent/job-folder.js";
import { scopeProblem } from "../config/key-part.js";
import type { ProfileSpec } from "../config/profile-schema.js";
import { type Config, configFile, configText, profileConfig, resolveParsed } from "../config/resolve.js";
import { storeFromText } from "../config/store-config.js";
import { validatedConfig } from "../config/validated-config.js";
import { hostEnvironment } from "../environment.js";
import { ConfigError, UsageError } from "../errors.js";
import type { CacheFolder } from "../kinds/kind.js";
import { CACHE_KIND_NAMES, type CacheKindName } from "../kinds/kind.js";
import type { Log } from "../log.js";
import { sourcedEnv } from "../process/source-env.js";
import type { StackFingerprint } from "../stack/fingerprint.js";
import type { Store } from "../store/store.js";
import { jobContext, probeJobStack } from "./build-context.js";
import { pathLineCaches } from "./path-lines.js";

/**
 * What a command line or the action's inputs change in kcache.yml for one invocation. The CLI's
 * flags and the action's inputs both become this; nothing travels through the environment.
 */
export interface JobOverrides {
  /** A folder, `s3://bucket/prefix` or `gha`; replaces kcache.yml's store. */
  store?: string;
  /** actions/cache-style path lines (globs, `!` exclusions); replace the configured caches. */
  paths?: string[];
  /** The kind of those paths; "auto" (the default) detects each folder's layout. */
  kind?: CacheKindName | "auto";
  /** An explicit key: the workload prefix, as the action's `key` input. */
  key?: string;
  /** Fallback key prefixes, as actions/cache's restore-keys; replace key.restore-prefixes. */
  restoreKeys?: string[];
  profile?: string;
  revision?: string;
  /** This build's scope, declared (--scope): replaces key.scope; taken only where the CI's facts allow it. */
  scope?: string;
  /** Which faults fail the command (--strict, the action's strict input). */
  strict?: Strictness;
  /** The persistent-runner settings for every cache (the action's inputs, the CLI's flags). */
  trustLocal?: boolean;
  isolate?: boolean;
  maxSize?: number;
  /** Restore Triton caches lazily (--lazy, the action's restore input): cache/lazy/. */
  lazy?: boolean;
}

export interface JobRequest {
  /** kcache.yml's path (default $KCACHE_CONFIG, then ./kcache.yml), or a configuration already loaded. */
  configFile?: string;
  config?: Config;
  overrides?: JobOverrides;
  /** The command touches no cache folder: caches whose path cannot be expanded here are left out. */
  cachesUnused?: boolean;
  /**
   * The command writes nothing on this machine but what it is asked to (ls, inspect, stats, prune,
   * trim, workflow, stack): kcache.yml's validation is not kept in the state folder.
   */
  writesNoState?: boolean;
  log: Log;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  progress?: JobContext["progress"];
  /** A fingerprint already probed (tests, benchmarks): the stack is not probed again. */
  stack?: StackFingerprint;
  store?: Store;
  /** kcache itself runs the whole job (`kcache run`, the action's run mode). */
  runsTheJob?: boolean;
}

/** One invocation's job: its settled configuration, its profile if any, and the context to restore and save. */
export interface Job {
  config: Config;
  profile: { name: string; spec: ProfileSpec } | null;
  ctx: JobContext;
  /** Probed once per invocation; every run of a compare or prewarm reuses it. */
  stack: StackFingerprint;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** kcache.yml with the overrides and the profile applied, in that order of precedence: overrides win. */
export async function jobConfig(req: JobRequest): Promise<{ config: Config; profile: Job["profile"] }> {
  const env = req.env ?? hostEnvironment();
  const cwd = req.cwd ?? process.cwd();
  const o = req.overrides ?? {};
  let config = req.config ?? (await loadJobConfig(req, env, cwd, o.store));
  if (req.config && o.store !== undefined)
    config = { ...config, store: storeFromText(o.store, "store", env, cwd) };
  let profile: Job["profile"] = null;
  if (o.profile) {
    const p = profileConfig(config, o.profile, env);
    config = p.config;
    profile = { name: o.profile, spec: p.profile };
  }
  if (o.paths?.length) {
    config = { ...config, caches: pathLineCaches(o.paths, o.kind ?? "auto", "path", env, cwd) };
  }
  if (o.restoreKeys?.length) config = { ...config, key: { ...config.key, restorePrefixes: o.restoreKeys } };
  if (o.scope !== undefined) {
    const problem = scopeProblem(o.scope);
    if (problem) throw new UsageError(`--scope ${o.scope} ${problem}`);
    config = { ...config, key: { ...config.key, scope: { scope: o.scope, source: "--scope" } } };
  }
  const caches = config.caches.map((c) => persistentCache(c, o));
  for (const [i, c] of caches.entries()) {
    // An isolated job's folder reaches its commands only through the cache's variable: without one,
    // the job would compile into the shared folder and its save would find nothing of its own.
    if (c.isolate && !c.env)
      throw new ConfigError(
        o.paths?.length
          ? `path ${c.path}: isolate needs the variable that points the job's commands at their own folder, and kcache cannot tell it from this path (not $TRITON_CACHE_DIR, $TORCHINDUCTOR_CACHE_DIR, their default folders, nor a Triton or Inductor cache yet): give kind: triton or kind: inductor (the action's kind input, --kind)`
          : `${config.source}: caches[${i}] (${c.name}): isolate needs the variable that points the job's commands at their own folder, and kind: ${c.kind} has none: add env: <VARIABLE> to the cache, or leave isolate off`,
      );
  }
  return { config: { ...config, caches }, profile };
}

/** kcache.yml (or the defaults) as validated before, else validated now (config/validated-config.ts). */
async function loadJobConfig(
  req: JobRequest,
  env: NodeJS.ProcessEnv,
  cwd: string,
  store: string | undefined,
): Promise<Config> {
  const found = configFile({ file: req.configFile, cwd, env });
  const text = found ? configText(found) : null;
  const parsed = await validatedConfig(found, text, env, { keep: req.writesNoState !== true });
  return resolveParsed(parsed, found ?? "(defaults)", env, cwd, { store, cachesUnused: req.cachesUnused });
}

/**
 * A cache with the overrides' persistent-runner settings, at its persistent folder: a later step of
 * an isolated job finds the cache's variable pointing at the job's own folder (the restore exported
 * it), which stands for the folder it was made from.
 */
function persistentCache(c: CacheFolder, o: JobOverrides): CacheFolder {
  return {
    ...c,
    path: persistentFolderOf(c.path),
    trustLocal: o.trustLocal ?? c.trustLocal,
    isolate: o.isolate ?? c.isolate,
    maxSize: o.maxSize ?? c.maxSize,
    lazy: o.lazy ?? c.lazy,
  };
}

/**
 * The one way in: the CLI and the action both turn (kcache.yml, overrides) into a job here. The
 * stack is probed once.
 */
export async function buildJob(req: JobRequest): Promise<Job> {
  let env = req.env ?? hostEnvironment();
  const cwd = req.cwd ?? process.cwd();
  const o = req.overrides ?? {};
  const { config, profile } = await jobConfig(req);
  // A profile's source: scripts (set_env.sh) make the environment everything after runs in, the
  // stack probe included (CANN's location and the codegen variables are key parts).
  if (profile?.spec.source.length) {
    const at = profile.spec.workdir ? path.resolve(cwd, profile.spec.workdir) : cwd;
    env = await sourcedEnv(profile.spec.source, env, at, `${config.source}: profiles.${profile.name}.source`);
  }
  const probeEnv = profile ? { ...env, ...profile.spec.env } : env;
  const stack = req.stack ?? (await probeJobStack(config, req.log, probeEnv, o.strict ?? Strictness.none));
  const ctx = await jobContext({
    config,
    log: req.log,
    env,
    cwd,
    revision: o.revision,
    strict: o.strict,
    stack,
    store: req.store,
    progress: req.progress,
    key: o.key,
    runsTheJob: req.runsTheJob,
    profile,
  });
  return { config, profile, ctx, stack, env, cwd };
}

/** The same job over other cache folders (a compare's fresh folders per run): its own local state. */
export function withCaches(job: Job, caches: CacheFolder[]): Job {
  const ctx: JobContext = {
    ...job.ctx,
    caches,
    stateFile: stateFile(
      stateDir(job.env),
      job.ctx.prefix,
      caches.map((c) => c.path),
      job.ctx.scopes.write,
    ),
  };
  return { ...job, config: { ...job.config, caches }, ctx };
}

/** A kind as the --kind flag or the action's kind input gives it. */
export function parseKind(text: string, label: string): CacheKindName | "auto" {
  const kinds = [...CACHE_KIND_NAMES, "auto"] as const;
  const k = text.trim() || "auto";
  if (!(kinds as readonly string[]).includes(k))
    throw new UsageError(`${label} ${text}: use one of ${kinds.join(", ")}`);
  return k as CacheKindName | "auto";
}
