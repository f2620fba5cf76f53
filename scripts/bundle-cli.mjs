#!/usr/bin/env node
// Bundles the CLI into build/cli/ (part of `npm run build`): one file per entry (main.js, the pack
// worker threads' pack-worker.js, python-probe.js, which bin/kcache.js starts first, and
// standard-streams.js, which it runs before anything) and shared
// chunks, split at the CLI's lazy imports so a command loads only what it runs. Node resolves and
// reads a few files instead of hundreds: `kcache key` starts ~60 ms sooner than from build/src/.
// bin/kcache.js falls back to build/src/ when build/cli/ is missing.
import fs from "node:fs";
import { build } from "esbuild";
import { copyZstdWasm, nodeEsm } from "./esbuild-node.mjs";

const outdir = process.argv[2] ?? "build/cli";
// Chunk names change with their content: start empty so old ones do not pile up.
fs.rmSync(outdir, { recursive: true, force: true });
await build({
  ...nodeEsm(),
  entryPoints: [
    "src/cli/main.ts",
    "src/pack/threads/pack-worker.ts",
    "src/stack/python-probe.ts",
    "src/process/standard-streams.ts",
  ],
  outdir,
  entryNames: "[name]",
  splitting: true,
  minifyWhitespace: true,
  minifySyntax: true,
  // The ESM builds of the SDK's packages: their CommonJS builds lose named exports when a split
  // chunk imports them dynamically (NodeHttpHandler came back undefined).
  mainFields: ["module", "main"],
});
copyZstdWasm(outdir);
