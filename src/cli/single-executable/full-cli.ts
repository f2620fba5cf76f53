import { locateSeaMain } from "./import-meta-url.js";

/*
 * The single executable's whole CLI: scripts/build-sea.mjs bundles this into a script of its own,
 * carried as an asset and compiled when a command needs it (script-assets.ts). The start-up
 * snapshot holds only the part that `kcache key`, `stack`, `--version` and `--help` run (entry.ts):
 * every run reads the whole snapshot in, and a snapshot of the whole CLI had those quick commands
 * deserialize ~1,700 functions and their scope that they never call. Every other command runs here,
 * in this script's own copy of kcache's modules: a process runs one part or the other, never both.
 */

/**
 * Runs the command line, kcache's code reading `mainFile` (cli/main.js among the placed files) as
 * its own: its modules load after that is known.
 */
export function runCli(mainFile: string): Promise<void> {
  locateSeaMain(mainFile);
  return import("../main.js").then((m) => m.runToEnd(process.argv, m.main));
}
