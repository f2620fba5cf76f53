/**
 * Runs kcache's command line and exits once the command is done, as bin/kcache.js and the single
 * executable both do. A transfer the command gave up on (a hung upload to a stalled store) must not
 * keep the job waiting; output is flushed first.
 */
export function runToEnd(argv: string[], main: (argv: string[]) => Promise<void>): Promise<void> {
  let finished = false;
  const exit = () => {
    finished = true;
    process.stdout.write("", () => process.stderr.write("", () => process.exit()));
  };
  // Node exits quietly, with status 0, when nothing is left to wait for though the command's work
  // never settled (a stream that neither ended nor failed): a save lost without a word. Say so: for a
  // command that restores or saves, as a store fault (a warning, exit 3 under --strict); else a bug.
  process.on("beforeExit", () => {
    if (finished) return;
    finished = true;
    const cache = ["restore", "save", "prewarm", "run"].includes(argv[2] as string);
    const what = `kcache ${argv[2] ?? ""} stopped before it finished: a store transfer or file read neither ended nor failed`;
    if (cache && !argv.some((a) => a === "--strict" || a.startsWith("--strict="))) {
      process.stderr.write(`kcache: warning: ${what}; nothing more was restored or saved\n`);
      process.exitCode = 0;
    } else {
      process.stderr.write(`kcache: error: ${what}\n`);
      process.exitCode = cache ? 3 : 1;
    }
  });
  return main(argv).then(exit);
}
