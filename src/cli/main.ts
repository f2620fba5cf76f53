import { Command, Option } from "commander";
import { CI_SYSTEMS } from "../ci/systems.js";
import { holdYoungGeneration } from "../process/young-generation.js";
import { VERSION } from "../version.js";
import { common, readOnly } from "./common-options.js";
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
    await commandsFor(argv).parseAsync(argv);
  } catch (e) {
    process.exitCode = exitCodeFor(e);
  }
}

/** Programs declared ahead (prepareCommands), by the command each is for; each serves one command line. */
const prepared = new Map<string, Command>();

/**
 * Declares the programs of `names` ahead of their command lines: the single executable does as its
 * start-up snapshot is made (snapshot.ts), so that `kcache key` and `kcache stack` find theirs made.
 */
export function prepareCommands(names: string[]): void {
  for (const name of names) prepared.set(name, declareCommands(name));
}

/**
 * The program with only the command the line names declared: declaring every command with its
 * options was a share of `kcache key`'s start-up. Every command where the line names none that
 * exists (help, the version, a mistyped one: commander lists them, or suggests one).
 */
function commandsFor(argv: string[]): Command {
  const named = argv[2] ?? "";
  const ahead = prepared.get(named);
  prepared.delete(named);
  const program = ahead ?? declareCommands(named);
  return program.commands.length ? program : declareCommands();
}

/**
 * Declares the commands (or only the one named `only`), and nothing else; each lives in its own
 * module under commands/ and is imported only when run, so `kcache --help` and the fast commands
 * start quickly.
 */
export function declareCommands(only?: string): Command {
  const declare = (name: string, declaration: () => void) => {
    if (only === undefined || only === name) declaration();
  };
  const program = new Command("kcache")
    .description("Keep Triton and other kernel JIT caches warm between CI runs.")
    .version(VERSION)
    .exitOverride()
    // The error and a pointer, not 40 lines of help that scroll the error away.
    .showHelpAfterError("(kcache --help lists the commands; kcache <command> --help its options)");

  declare("restore", () =>
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
    ).action(async (o) => (await import("./commands/restore.js")).restoreCommand(o)),
  );

  declare("save", () =>
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
    ).action(async (o) => (await import("./commands/save.js")).saveCommand(o)),
  );

  declare("stack", () =>
    common(
      program.command("stack").description("print the software stack fingerprint that keys are made of"),
    ).action(async (o) => (await import("./commands/stack.js")).stackCommand(o)),
  );

  declare("key", () =>
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
    ).action(async (o) => (await import("./commands/key.js")).keyCommand(o)),
  );

  declare("ls", () =>
    common(
      program
        .command("ls")
        .description("list saved keys per prefix with sizes, ages and entry counts")
        .option("--prefix <prefix>", "only keys starting with this"),
      { strict: false, store: true },
    ).action(async (o) => (await import("./commands/ls.js")).lsCommand(o)),
  );

  declare("inspect", () =>
    common(
      program
        .command("inspect")
        .description("show one saved key: stack, revision, packs and entries")
        .argument("<key>", "the key to show")
        .option("--scope <scope>", "look in this scope only (e.g. branch/main, pr/12)")
        .option("--entries", "list every entry"),
      { strict: false, store: true },
    ).action(async (key, o) => (await import("./commands/inspect.js")).inspectCommand(key, o)),
  );

  declare("prune", () =>
    common(
      readOnly(program.command("prune"))
        .description("delete old keys and every pack no remaining key references")
        .option("--keep <n>", "keep the newest N keys per scope and prefix")
        .option("--older-than <age>", "delete keys older than this (30m, 12h, 7d, 2w)")
        .option("--max-size <size>", "delete the oldest keys until referenced packs fit (e.g. 10GB)")
        .addOption(new Option("--grace <age>", "never delete packs younger than this").default("1h"))
        .option("--dry-run", "say what would be deleted; delete nothing"),
      { strict: false, store: true },
    ).action(async (o) => (await import("./commands/prune.js")).pruneCommand(o)),
  );

  declare("trim", () =>
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
    ).action(async (o) => (await import("./commands/trim.js")).trimCommand(o)),
  );

  declare("run", () =>
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
    ).action(async (o) => (await import("./commands/run.js")).runCommandCli(o)),
  );

  declare("prewarm", () =>
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
    ).action(prewarmAction),
  );

  declare("workflow", () =>
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
    ).action(async (o) => (await import("./commands/workflow.js")).workflowCommand(o)),
  );

  declare("compare", () =>
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
    ).action(async (o) => (await import("./commands/compare.js")).compareCommand(o)),
  );

  declare("stats", () =>
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
    ).action(async (o) => (await import("./commands/stats.js")).statsCommand(o)),
  );

  declare("diff", () =>
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
      .action(async (a, b, o) => (await import("./commands/diff.js")).diffCommand(a, b, o)),
  );

  return program;
}
