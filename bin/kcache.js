#!/usr/bin/env node
// Commands that key by the software stack start its Python probe first, so the interpreter runs
// while Node loads the CLI (kcache.yml's stack.python, when it is not python3, is probed later).
const STACKED = new Set(["key", "restore", "save", "run", "prewarm", "stack", "compare"]);
if (STACKED.has(process.argv[2]))
  import("../build/src/stack/python-probe.js")
    .then((p) => p.probePython("python3", process.env))
    .catch(() => {});
import("../build/src/cli/main.js").then((m) => m.main(process.argv));
