import path from "node:path";
import sea from "node:sea";
import v8 from "node:v8";
import { hostEnvironment } from "../../environment.js";
import { settleStandardStreams } from "../../process/standard-streams.js";
import { locateSeaMain } from "./import-meta-url.js";
import { placeRuntimeFiles } from "./runtime-files.js";
import { loadAhead } from "./snapshot.js";

/*
 * The single executable's main script (scripts/build-sea.mjs bundles it into one CommonJS file).
 * Built with a start-up snapshot, the CLI's modules are loaded as the snapshot is made and each run
 * starts from there; built without (for another architecture), they load as it starts. Either way the
 * files kcache needs as files are placed first, then the CLI runs as bin/kcache.js runs it.
 */
type Cli = typeof import("../main.js");

/** Commands that run and load none of the placed files (start-up time matters most to them): the rest verify them. */
const USES_NO_PLACED_FILE = new Set(["key", "stack", "--version", "-V", "--help", "-h", "help"]);

if (v8.startupSnapshot.isBuildingSnapshot()) {
  const cli = loadAhead();
  v8.startupSnapshot.setDeserializeMainFunction(() => start(cli));
} else start(import("../main.js"));

function start(cli: Promise<Cli>): void {
  settleStandardStreams();
  const root = placeRuntimeFiles(
    hostEnvironment(),
    (name) => Buffer.from(sea.getAsset(name)),
    !USES_NO_PLACED_FILE.has(process.argv[2] ?? ""),
  );
  locateSeaMain(path.join(root, "cli", "main.js"));
  cli.then((m) => m.runToEnd(process.argv, m.main));
}
