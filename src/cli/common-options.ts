import type { Command } from "commander";

/*
 * The options commands share, as main.ts's declaration table adds them to each command.
 */

/** Which of the shared options a command takes beyond --config, --verbose and --quiet. */
export interface CommonOptions {
  json?: boolean;
  strict?: boolean;
  revision?: boolean;
  store?: boolean;
  overrides?: boolean;
}

/** The options every command takes, and those `opts` asks for: --config, --verbose, --quiet, --json, --strict... */
export function common(cmd: Command, opts: CommonOptions = {}): Command {
  cmd.option("-c, --config <file>", "kcache.yml to use (default: $KCACHE_CONFIG, then ./kcache.yml)");
  cmd.option("-v, --verbose", "say more: the keys looked up, each pack with its size and time");
  cmd.option("-q, --quiet", "say only warnings and errors (results still go to stdout)");
  if (opts.json !== false) cmd.option("--json", "print the result as JSON on stdout");
  if (opts.strict !== false)
    cmd.option(
      "--strict [codes]",
      "exit 3 on store or data faults (store down, damaged pack, full disk) and 4 on stack faults, instead of warning: all of them, or the fault codes given (entry-bad,disk-failed; docs/cli.md#faults)",
    );
  if (opts.revision)
    cmd.option("--revision <rev>", "revision for the key (default: $GITHUB_SHA, then git HEAD)");
  if (opts.revision)
    cmd.option(
      "--scope <scope>",
      "declare this build's scope where its CI cannot say (kcache.yml's key.scope): default-branch (this runner builds only the default branch), branch/<name>, tag/<name>, pr/<n>; refused where the CI's facts say otherwise (docs/other-ci.md)",
    );
  if (opts.store || opts.overrides)
    cmd.option("--store <store>", "the store, replacing kcache.yml's: a folder, s3://bucket/prefix or gha");
  // The action's inputs of the same names; see docs/github-actions.md.
  if (opts.overrides) {
    cmd.option(
      "--path <paths...>",
      "cache these folders instead of kcache.yml's caches, as actions/cache's path: globs, ~, and !exclusions",
    );
    cmd.option(
      "--kind <kind>",
      "kind of the --path folders: auto (detect each), triton, inductor or dir",
      "auto",
    );
    cmd.option(
      "--key <key>",
      "an explicit key: the workload prefix, to which the stack id and the revision are appended",
    );
    cmd.option(
      "--restore-key <prefixes...>",
      "key prefixes to fall back to, in order (actions/cache's restore-keys)",
    );
    persistentRunner(cmd);
  }
  return cmd;
}

/** Commands that write the store: read-only mode (store.read-only, $KCACHE_READ_ONLY; docs/other-ci.md). */
export function readOnly(cmd: Command): Command {
  return cmd.option(
    "--read-only",
    "restore as ever and write nothing to the store (no pack, manifest, run record or live object): a job without write credentials",
  );
}

/** A persistent self-hosted runner's settings for every cache (kcache.yml's per cache; docs/self-hosted.md). */
function persistentRunner(cmd: Command): Command {
  return cmd
    .option(
      "--isolate",
      "run the job in a folder of its own, made from the cache folder by hard links; merged back only after a default-branch or tag job passed",
    )
    .option(
      "--trust-local",
      "also upload entries the folder held before the job that the restored key lacks (a runner that only runs the default branch)",
    )
    .option("--max-size <size>", "trim each cache folder to this at the end of the job (e.g. 20GB)")
    .option(
      "--lazy",
      "restore Triton caches lazily: place the entries recent jobs used, fetch any other one when the job looks it up (kcache.yml's restore: lazy)",
    );
}
