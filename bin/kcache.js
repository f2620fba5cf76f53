#!/usr/bin/env node
import fs from "node:fs";
import module from "node:module";

// Node 22 and later keep compiled code between runs (the next command starts faster); Node 20 lacks it.
module.enableCompileCache?.();

// build/cli/ is the bundled CLI (scripts/bundle-cli.mjs), which starts faster; build/src/ is tsc's.
const built = (file) => fs.existsSync(new URL(`../build/${file}`, import.meta.url));
const dir = built("cli/main.js") ? "../build/cli" : "../build/src/cli";
// A release's tarball ships build/ (npm pack builds it); a clone, or npm installing a git URL, has
// none until it is built: installing runs no script (package.json has no prepare).
if (dir === "../build/src/cli" && !built("src/cli/main.js")) {
  const root = decodeURI(new URL("..", import.meta.url).pathname);
  process.stderr.write(
    `kcache: error: this copy of kcache is not built (no ${root}build/): run \`npm ci && npm run build\` in ${root}, or install a release's tarball, which ships it built\n`,
  );
  process.exit(1);
}
// First of all: kcache's standard streams as a cache's must be (process/standard-streams.ts says why).
const streams =
  dir === "../build/cli" ? `${dir}/standard-streams.js` : "../build/src/process/standard-streams.js";
(await import(streams)).settleStandardStreams();
const probe = dir === "../build/cli" ? `${dir}/python-probe.js` : "../build/src/stack/python-probe.js";
// Commands that key by the software stack start its Python probe first, so the interpreter runs
// while Node loads the CLI (kcache.yml's stack.python, when it is not python3, is probed later).
const STACKED = new Set(["key", "restore", "save", "run", "prewarm", "stack", "compare"]);
if (STACKED.has(process.argv[2]))
  import(probe).then((p) => p.probePython("python3", process.env)).catch(() => {});
// run-to-end.ts: exits once the command is done, and says so when its work never settled.
import(`${dir}/main.js`).then((m) => m.runToEnd(process.argv, m.main));
