import { Strictness } from "../cache/faults.js";
import type { JobContext } from "../cache/job-context.js";
import { stateDir, stateFile } from "../cache/local-state.js";
import { keyPartProblem } from "../config/key-part.js";
import type { ProfileSpec } from "../config/profile-schema.js";
import type { Config } from "../config/resolve.js";
import { environmentMistakes, hostEnvironment, runtimeSettings } from "../environment.js";
import { ConfigError, StackMismatchError } from "../errors.js";
import { primaryKey, stackPrefix } from "../keys/key.js";
import { checkRevision, currentRevision } from "../keys/revision.js";
import { runIdentity } from "../keys/run-identity.js";
import { type ScopePlan, ScopeRefusal, scopePlan } from "../keys/scope.js";
import { usePickleInterpreter } from "../kinds/pickle-rewriter.js";
import type { Log } from "../log.js";
import { jobAnchorPid } from "../process/job-anchor.js";
import { probeStack, type StackFingerprint } from "../stack/fingerprint.js";
import { findOnPath } from "../stack/python-probe.js";
import { declaredReadOnly, openStore } from "../store/open.js";
import { readOnlyStore } from "../store/read-only.js";
import type { Store } from "../store/store.js";
import { autotuneSettings } from "./autotune-settings.js";

export interface JobContextOptions {
  config: Config;
  log: Log;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  revision?: string;
  /** Which faults fail the command (--strict); none when not given. */
  strict?: Strictness;
  /** A fingerprint already probed (by buildJob, or a test): it is not probed again. */
  stack?: StackFingerprint;
  store?: Store;
  progress?: JobContext["progress"];
  /**
   * An explicit key (the action's `key`, the CLI's --key): the workload prefix the stack id and the
   * revision are appended to. A key that already ends with them (a cache-primary-key output passed
   * back) is taken as it is.
   */
  key?: string;
  /** kcache itself runs the whole job (`kcache run`): it is what the job's folders are named for. */
  runsTheJob?: boolean;
  /** The profile the job runs, for its autotune settings. */
  profile?: { name: string; spec: ProfileSpec } | null;
}

/** Probes the stack once; its warnings and pin mismatches are said here, once. */
export async function probeJobStack(
  config: Config,
  log: Log,
  env: NodeJS.ProcessEnv,
  strict: Strictness,
): Promise<StackFingerprint> {
  const stack = await probeStack({ python: config.stack.python, pins: config.stack.pins, env });
  reportStack(config, stack, log, strict);
  return stack;
}

/**
 * Says what the probe could not find (stack-incomplete) and pin mismatches (stack-mismatch): a
 * warning, or exit 4 where --strict names the fault.
 */
export function reportStack(config: Config, stack: StackFingerprint, log: Log, strict: Strictness): void {
  for (const w of stack.warnings) log.warn(w);
  for (const e of stack.errors) {
    const msg = `stack: ${e}`;
    if (strict.fails("stack-incomplete")) throw new StackMismatchError(msg);
    log.warn(msg);
  }
  if (stack.mismatches.length) {
    const msg = `${config.source}: stack.pins disagree with this machine: ${stack.mismatches.join("; ")}; update the pins or the machine`;
    if (strict.fails("stack-mismatch")) throw new StackMismatchError(msg);
    log.warn(msg);
  }
}

/** The revision, the scopes and the key of a job whose configuration is settled. */
export async function jobContext(opts: JobContextOptions): Promise<JobContext> {
  const env = opts.env ?? hostEnvironment();
  const cwd = opts.cwd ?? process.cwd();
  const { config, log } = opts;
  const strict = opts.strict ?? Strictness.none;
  for (const mistake of environmentMistakes(env)) log.warn(mistake);
  const stack = opts.stack ?? (await probeJobStack(config, log, env, strict));
  const scopes = await jobScopes(config, env, cwd, log);
  let revision =
    opts.revision !== undefined ? checkRevision(opts.revision, "--revision") : currentRevision(env, cwd);
  if (revision !== null && revision !== "" && opts.revision === undefined) {
    revision = checkRevision(revision, env.GITHUB_SHA ? "$GITHUB_SHA" : "git HEAD");
  }
  // Not a checkout: the commit the CI says it built (CI_COMMIT_SHA, BUILDKITE_COMMIT, GIT_COMMIT).
  revision ||= scopes.identity.commit;
  if (!revision) {
    log.warn(
      "no revision: GITHUB_SHA is unset, this is not a git checkout and no CI names a commit; using revision 'none'",
    );
    revision = "none";
  }
  const readOnly = declaredReadOnly(config, env);
  const explicit = opts.key !== undefined ? resolvedKey(opts.key, stack.stackId, revision, log) : null;
  const prefix = explicit?.prefix ?? config.key.prefix;
  // The stack the key names: this machine's, or the one a resolved key was made with.
  const keyStack = explicit?.stackId ?? stack.stackId;
  // torch.compile's pickles are rewritten by the interpreter the stack names, as the job's PATH finds it.
  usePickleInterpreter(() => ({
    python: findOnPath(config.stack.python, env) ?? config.stack.python,
    source: `stack.python${config.stack.python === "python3" ? ", default python3," : ` ${config.stack.python}`} in ${config.source}`,
  }));
  return {
    caches: config.caches,
    prefix,
    restorePrefixes: config.key.restorePrefixes,
    save: config.save,
    store: opts.store ? readOnlyStore(opts.store, readOnly) : openStore(config, env, readOnly),
    readOnly,
    live: config.store.type !== "gha" && config.store.live === true,
    stack: { stackId: stack.stackId, components: stack.components },
    autotune: autotuneSettings({
      profile: opts.profile ?? null,
      env,
      cwd,
      device: stack.info.accelerator ?? "",
      log,
    }),
    revision,
    scopes,
    key: primaryKey(prefix, keyStack, revision),
    stackKeyPrefix: stackPrefix(prefix, keyStack),
    stateFile: stateFile(
      stateDir(env),
      prefix,
      config.caches.map((c) => c.path),
      scopes.write,
    ),
    jobPid: jobAnchorPid(env, opts.runsTheJob === true),
    log,
    strict,
    runtime: runtimeSettings(env),
    progress: opts.progress,
  };
}

/**
 * The scopes this build writes and reads, from what its CI says (keys/run-identity.ts) and the
 * declared key.scope; one warning where the build cannot be placed, a ConfigError where the
 * declaration contradicts the facts.
 */
export async function jobScopes(
  config: Config,
  env: NodeJS.ProcessEnv,
  cwd: string,
  log: Log,
): Promise<ScopePlan> {
  const identity = await runIdentity(env, cwd);
  let scopes: ScopePlan;
  try {
    scopes = scopePlan(identity, {
      configuredDefault: config.key.defaultBranch,
      declared: config.key.scope,
      cwd,
    });
  } catch (e) {
    if (e instanceof ScopeRefusal) throw new ConfigError(e.message);
    throw e;
  }
  if (scopes.unplaced) log.warn(scopes.unplaced);
  return scopes;
}

/**
 * The prefix an explicit key stands for, and the stack id it already names, if any. A key that ends
 * with `-<stack id>-<revision>` is one kcache resolved (a cache-primary-key output passed back, or
 * the action's restore step's key in its post step): it is kept as it is, even where this machine's
 * stack is another since (an install step ran between the restore and the save), so the next run's
 * restore, made where this one's was, finds it; one warning says so. ConfigError naming the key when
 * GitHub's rules refuse it.
 */
function resolvedKey(
  key: string,
  stackId: string,
  revision: string,
  log: Log,
): { prefix: string; stackId: string | null } {
  const tail = `-${revision}`;
  const named = key.endsWith(tail) ? /^(.+)-([0-9a-f]{12})$/.exec(key.slice(0, -tail.length)) : null;
  const prefix = named?.[1] ?? key;
  const problem = keyPartProblem(prefix);
  if (problem) throw new ConfigError(`key "${prefix}": ${problem}`);
  const keyStack = named?.[2] ?? null;
  if (keyStack !== null && keyStack !== stackId)
    log.warn(
      `key ${key} names stack ${keyStack}, and this machine's stack is ${stackId} now (something was installed after the step that made the key): keeping the key, so the next run's restore finds it; put the kcache step after the install so its key names the stack that compiles the kernels`,
    );
  return { prefix, stackId: keyStack };
}
