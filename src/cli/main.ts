import { Command, Option } from "commander";
import { CI_SYSTEMS } from "../ci/systems.js";
import { holdYoungGeneration } from "../process/young-generation.js";
import { VERSION } from "../version.js";
import { exitCodeFor } from "./exit-codes.js";
import { prewarmAction, withCpuOptions } from "./prewarm-options.js";

export { runToEnd } from "./run-to-end.js";

/**
 * Runs a command line. One error boundary maps known errors to documented exit codes with a clean
 * message; anything else is a bug and prints its stack.
 */
export async function main(argv: string[]): Promise<void> {
  holdYoungGeneration();
  try {
    await declareCommands().parseAsync(argv);
  } catch (e) {
    process.exitCode = exitCodeFor(e);
  }
}

/**
 * Declares the commands, and nothing else (the single executable declares them once as its start-up
 * snapshot is made, so that a run finds this code compiled); each lives in its own module under
 * commands/ and is imported only when run, so `kcache --help` and the fast commands start quickly.
 */
export function declareCommands(): Command {
  const program = new Command("kcache")
    .description("Keep Triton and other kernel JIT caches warm between CI runs.")
    .version(VERSION)
    .exitOverride()
    // The error and a pointer, not 40 lines of help that scroll the error away.
    .showHelpAfterError("(kcache --help lists the commands; kcache <command> --help its options)");

  const common = (
    cmd: Command,
    opts: { json?: boolean; strict?: boolean; revision?: boolean; store?: boolean; overrides?: boolean } = {},
  ) => {
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
  };
  // Commands that write the store: read-only mode (store.read-only, $KCACHE_READ_ONLY; docs/other-ci.md).
  const readOnly = (cmd: Command) =>
    cmd.option(
      "--read-only",
      "restore as ever and write nothing to the store (no pack, manifest, run record or live object): a job without write credentials",
    );
  // A persistent self-hosted runner's settings for every cache (kcache.yml's per cache; docs/self-hosted.md).
  const persistentRunner = (cmd: Command) =>
    cmd
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

  common(
    readOnly(program.command("restore"))
      .description("restore the caches from the best-matching saved key")
      .option("--lookup-only", "only look the key up; download nothing")
      .option("--fail-on-cache-miss", "exit 5 when no key matched")
      .option(
        "-p, --profile <name>",
        "use this profile of kcache.yml: its key prefix, environment and autotune settings (as the action's profile input)",
      ),
    { revision: true, overrides: true },
  ).action(async (o) => (await import("./commands/restore.js")).restoreCommand(o));

  common(
    readOnly(program.command("save"))
      .description("save what is new in the caches under this run's key")
      .option(
        "--no-evict",
        "keep entries the job did not use (for a save after a step that failed); see save.keep-unused",
      )
      .option(
        "-p, --profile <name>",
        "use this profile of kcache.yml: its key prefix, environment and autotune settings (as the action's profile input)",
      ),
    { revision: true, overrides: true },
  ).action(async (o) => (await import("./commands/save.js")).saveCommand(o));

  common(
    program.command("stack").description("print the software stack fingerprint that keys are made of"),
  ).action(async (o) => (await import("./commands/stack.js")).stackCommand(o));

  common(
    program
      .command("key")
      .description("print this run's key, scopes and restore order")
      .option(
        "-p, --profile <name>",
        "use this profile of kcache.yml: its key prefix, environment and autotune settings (as the action's profile input)",
      ),
    {
      revision: true,
      overrides: true,
    },
  ).action(async (o) => (await import("./commands/key.js")).keyCommand(o));

  common(
    program
      .command("ls")
      .description("list saved keys per prefix with sizes, ages and entry counts")
      .option("--prefix <prefix>", "only keys starting with this"),
    { strict: false, store: true },
  ).action(async (o) => (await import("./commands/ls.js")).lsCommand(o));

  common(
    program
      .command("inspect")
      .description("show one saved key: stack, revision, packs and entries")
      .argument("<key>", "the key to show")
      .option("--scope <scope>", "look in this scope only (e.g. branch/main, pr/12)")
      .option("--entries", "list every entry"),
    { strict: false, store: true },
  ).action(async (key, o) => (await import("./commands/inspect.js")).inspectCommand(key, o));

  common(
    readOnly(program.command("prune"))
      .description("delete old keys and every pack no remaining key references")
      .option("--keep <n>", "keep the newest N keys per scope and prefix")
      .option("--older-than <age>", "delete keys older than this (30m, 12h, 7d, 2w)")
      .option("--max-size <size>", "delete the oldest keys until referenced packs fit (e.g. 10GB)")
      .addOption(new Option("--grace <age>", "never delete packs younger than this").default("1h"))
      .option("--dry-run", "say what would be deleted; delete nothing"),
    { strict: false, store: true },
  ).action(async (o) => (await import("./commands/prune.js")).pruneCommand(o));

  common(
    program
      .command("trim")
      .description(
        "trim each cache folder to its max-size, least recently used entries first, never one a running job may read",
      )
      .option("--max-size <size>", "the bound (e.g. 20GB; default: each cache's max-size in kcache.yml)")
      .option("--older-than <age>", "also remove entries unused for this long (30m, 12h, 7d, 2w)")
      .option("--dry-run", "say what would be removed; remove nothing")
      .option(
        "--path <paths...>",
        "trim these folders instead of kcache.yml's caches, as actions/cache's path",
      )
      .option(
        "--kind <kind>",
        "kind of the --path folders: auto (detect each), triton, inductor or dir",
        "auto",
      ),
    { strict: false },
  ).action(async (o) => (await import("./commands/trim.js")).trimCommand(o));

  common(
    readOnly(program.command("run"))
      .description(
        "restore, run a profile's commands as timed stages, check their results, save only if all passed",
      )
      .requiredOption("-p, --profile <name>", "the profile in kcache.yml to run")
      .option(
        "--out <dir>",
        "folder for logs, telemetry and kcache-report.json (default: $RUNNER_TEMP/kcache/<profile> or .kcache/<profile>; <folder>@2 while another run holds it)",
      )
      .option("--no-restore", "start cold: restore nothing")
      .option("--no-save", "never save, whatever the outcome"),
    { revision: true, overrides: true },
  ).action(async (o) => (await import("./commands/run.js")).runCommandCli(o));

  common(
    withCpuOptions(readOnly(program.command("prewarm")))
      .description("fill the default branch's cache for its head, only if it is missing")
      .requiredOption("-p, --profile <name>", "the profile in kcache.yml to run when the cache is missing")
      .option(
        "--if-changed <globs...>",
        "the newest cache is current unless a file matching these changed since its revision",
      )
      .option("--out <dir>", "folder for logs and the report of the run"),
    { revision: true, overrides: true },
  ).action(prewarmAction);

  common(
    program
      .command("workflow")
      .description(
        "write CI files for profiles: GitHub Actions workflows (the job, the prewarm), or GitLab CI, Buildkite or Jenkins pipelines",
      )
      .requiredOption("-p, --profile <names...>", "profiles to write workflows for")
      .addOption(new Option("--ci <system>", "the CI").choices(CI_SYSTEMS).default("github"))
      .option("--out <dir>", "where to write them (default: .github/workflows for github, else .)")
      .option(
        "--step",
        "print only the step that runs the profile, to put into a workflow you already have (with the permissions it needs)",
      )
      .option("--utc", "write UTC crons (exact all year, or refused with the reason) instead of timezone:")
      .option("--jitter", "move schedules off minute 0, to a minute fixed by the repository name")
      .option(
        "--seed <text>",
        "what the jittered minute depends on (default: $GITHUB_REPOSITORY or the folder name)",
      )
      .option("--check", "write nothing; exit 2 if the files differ from what would be written"),
    { strict: false },
  ).action(async (o) => (await import("./commands/workflow.js")).workflowCommand(o));

  common(
    readOnly(program.command("compare"))
      .description(
        "alternate cold and warm runs of a profile on this machine and revision, and report what the cache saves",
      )
      .requiredOption("-p, --profile <name>", "the profile in kcache.yml")
      .addOption(new Option("--rounds <n>", "cold and warm runs each").default("3"))
      .option(
        "--out <dir>",
        "where compare.json, compare.md, compare.html and each run's logs go (default .kcache/compare-<profile>; <folder>@2 while another compare holds it)",
      )
      .option(
        "--file <path>",
        "result file to compare record by record (default: the profile's compare: section)",
      )
      .option("--key <fields>", "comma-separated fields that identify a record")
      .option("--metric <fields...>", "numeric fields to compare (default median_ms)")
      .option("--records <path>", "dotted path to the records in the file")
      .option("--threshold <share>", "flag records whose timing moved more than this share (default 0.05)"),
    { revision: true, strict: false, store: true },
  ).action(async (o) => (await import("./commands/compare.js")).compareCommand(o));

  common(
    program
      .command("stats")
      .description(
        "what the cache did for the default branch's runs, per prefix and week, from the run records",
      )
      .option("--prefix <prefix>", "only workloads whose prefix starts with this")
      .option("--since <age>", "only runs younger than this (30d, 12h)")
      .option("--all-scopes", "count pull requests' and other branches' runs too")
      .option("--html <file>", "also write a self-contained HTML page with charts per prefix and week"),
    { strict: false, store: true },
  ).action(async (o) => (await import("./commands/stats.js")).statsCommand(o));

  program
    .command("diff")
    .description("compare two result files record by record (base vs head)")
    .argument("<base>", "result file of the base")
    .argument("<head>", "result file of the head")
    .requiredOption("--key <fields>", "comma-separated fields that identify a record, e.g. op,mode,B,T,H,D")
    .option("--metric <fields...>", "numeric fields to compare (default median_ms)")
    .option("--records <path>", "dotted path to the records (default: the file itself, or its results)")
    .option("--threshold <share>", "flag changes beyond this share (default 0.05)")
    .option("--fail-on-flag", "exit 6 when any change is flagged (to gate a pull request on it)")
    .option("--json", "print the comparison as JSON")
    .action(async (a, b, o) => (await import("./commands/diff.js")).diffCommand(a, b, o));

  return program;
}
