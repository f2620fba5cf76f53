import path from "node:path";
import sea from "node:sea";
import v8 from "node:v8";
import { hostEnvironment, restoreMovedNodeOptions } from "../../environment.js";
import { KcacheError } from "../../errors.js";
import { settleStandardStreams } from "../../process/standard-streams.js";
import { locateSeaMain } from "./import-meta-url.js";
import { placedRoot, placeRuntimeFiles } from "./runtime-files.js";
import { FULL_CLI_ASSET, FULL_CLI_CACHE_ASSET, type FullCli, loadScript } from "./script-assets.js";
import { loadAhead } from "./snapshot.js";

/*
 * The single executable's main script (scripts/build-sea.mjs bundles it into one CommonJS file): the
 * start-up part of the CLI. Built with a start-up snapshot, its modules are loaded as the snapshot is
 * made and each run starts from there; built without (for another architecture), they load as it
 * starts. The commands whose start-up is most of their time run here; every other command loads the
 * whole CLI (full-cli.ts) from its asset, after the files kcache needs as files are placed.
 */
type Cli = typeof import("../main.js");

/**
 * What the start-up part runs: commands that place and load none of the files (`key` and `stack`
 * read the kept answers, print and exit), and what commander answers alone (help, the version, a
 * usage error with no command). The build bundles every other command's module out of this part.
 */
const STARTUP_COMMANDS = new Set(["key", "stack", "--version", "-V", "--help", "-h", "help", ""]);
const HELP = new Set(["--help", "-h"]);

/**
 * Whether the start-up part answers the command line: its commands, and a command's help alone
 * (`kcache restore --help`), which commander gives before any command runs.
 */
function startupAnswers(argv: string[]): boolean {
  const [first = "", ...rest] = argv.slice(2);
  return (
    STARTUP_COMMANDS.has(first) || (rest.length === 1 && HELP.has(rest[0] ?? "") && !first.startsWith("-"))
  );
}

if (v8.startupSnapshot.isBuildingSnapshot()) {
  const cli = loadAhead();
  v8.startupSnapshot.setDeserializeMainFunction(() => start(() => cli));
} else start(() => import("../main.js"));

/**
 * Runs the command line; `cli` gives the start-up part's CLI, loaded only for its commands and
 * only once its location is known (without a snapshot it loads here, its modules reading it).
 */
function start(cli: () => Promise<Cli>): void {
  restoreMovedNodeOptions();
  settleStandardStreams();
  const env = hostEnvironment();
  const asset = (name: string) => Buffer.from(sea.getAsset(name));
  if (startupAnswers(process.argv)) {
    // Where the files would be placed: kcache.yml's kept answer is named by it, as for every command.
    locateSeaMain(path.join(placedRoot(env, asset), "cli", "main.js"));
    cli().then((m) => m.runToEnd(process.argv, m.main));
    return;
  }
  let root: string;
  try {
    root = placeRuntimeFiles(env, asset);
  } catch (e) {
    // Before the whole CLI's error boundary: its message and exit code, as it would give them.
    if (!(e instanceof KcacheError)) throw e;
    process.stderr.write(`kcache: error: ${e.message}\n`);
    process.exitCode = e.exitCode;
    return;
  }
  const full = loadScript(
    asset(FULL_CLI_ASSET).toString("utf8"),
    asset(FULL_CLI_CACHE_ASSET),
    path.join(root, "cli", FULL_CLI_ASSET),
    require,
  ) as FullCli;
  void full.runCli(path.join(root, "cli", "main.js"));
}
