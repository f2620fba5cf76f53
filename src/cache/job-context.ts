import type { Config } from "../config/load.js";
import { StackMismatchError } from "../errors.js";
import { primaryKey, stackPrefix } from "../keys/key.js";
import { checkRevision, currentRevision } from "../keys/revision.js";
import { type ScopePlan, scopePlan } from "../keys/scope.js";
import type { Log } from "../log.js";
import type { Progress } from "../progress.js";
import { probeStack, type StackFingerprint } from "../stack/fingerprint.js";
import { openStore } from "../store/open.js";
import type { Store } from "../store/store.js";
import { stateDir, stateFile } from "./local-state.js";

/** Everything a restore or save of one workload needs to know, worked out once. */
export interface JobContext {
  config: Config;
  store: Store;
  stack: StackFingerprint;
  revision: string;
  scopes: ScopePlan;
  /** `<prefix>-<stackId>-<revision>` */
  key: string;
  /** `<prefix>-<stackId>-` */
  stackKeyPrefix: string;
  stateFile: string;
  log: Log;
  /** --strict: store and data faults fail the command (exit 3) instead of warning. */
  strict: boolean;
  /** Shows a transfer's progress (the CLI's bar or log lines); none in library use. */
  progress?: (label: string, totalBytes: number | null) => Progress;
}

export interface JobContextOptions {
  config: Config;
  log: Log;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  revision?: string;
  strict?: boolean;
  /** A fingerprint already probed (tests, or a caller that probed once for several jobs). */
  stack?: StackFingerprint;
  store?: Store;
  progress?: (label: string, totalBytes: number | null) => Progress;
}

/** Probes the stack, finds the revision and scopes, and forms the key. */
export async function jobContext(opts: JobContextOptions): Promise<JobContext> {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const { config, log } = opts;
  const stack =
    opts.stack ?? (await probeStack({ python: config.stack.python, pins: config.stack.pins, env }));
  for (const w of stack.warnings) log.warn(w);
  if (stack.mismatches.length) {
    const msg = `${config.source}: stack.pins disagree with this machine: ${stack.mismatches.join("; ")}; update the pins or the machine`;
    if (opts.strict) throw new StackMismatchError(msg);
    log.warn(msg);
  }
  let revision =
    opts.revision !== undefined ? checkRevision(opts.revision, "--revision") : currentRevision(env, cwd);
  if (revision !== null && revision !== "" && opts.revision === undefined) {
    revision = checkRevision(revision, env.GITHUB_SHA ? "$GITHUB_SHA" : "git HEAD");
  }
  if (!revision) {
    log.warn("no revision: GITHUB_SHA is unset and this is not a git checkout; using revision 'none'");
    revision = "none";
  }
  const scopes = scopePlan(env, cwd, config.key.defaultBranch);
  return {
    config,
    store: opts.store ?? openStore(config),
    stack,
    revision,
    scopes,
    key: primaryKey(config.key.prefix, stack.stackId, revision),
    stackKeyPrefix: stackPrefix(config.key.prefix, stack.stackId),
    stateFile: stateFile(
      stateDir(env),
      config.key.prefix,
      config.caches.map((c) => c.path),
    ),
    log,
    strict: Boolean(opts.strict),
    progress: opts.progress,
  };
}
