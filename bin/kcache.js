#!/usr/bin/env node
import("../build/src/cli/main.js").then((m) => m.main(process.argv));
