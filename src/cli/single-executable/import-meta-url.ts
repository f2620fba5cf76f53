import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

/*
 * What `import.meta.url`, `__filename` and `__dirname` read in the single executable's bundle
 * (scripts/build-sea.mjs injects this module and defines those names as these bindings). The
 * executable is one CommonJS script with no file of its own, yet kcache finds its Python hook, its
 * pack worker, zstd.wasm and its package.json from where its code lies: these say it lies at
 * cli/main.js of the folder its files were placed in (runtime-files.ts), as in the npm package.
 */
export let seaImportMetaUrl = "";
export let seaFilename = "";
export let seaDirname = "";

/** Makes the bundle's code read `file` as its own location; called before the CLI's modules load. */
export function locateSeaMain(file: string): void {
  seaFilename = file;
  seaDirname = path.dirname(file);
  seaImportMetaUrl = pathToFileURL(file).href;
}

/**
 * A library the build keeps out of the main script (scripts/build-sea.mjs: the S3 and Azure SDKs,
 * @actions/core): its CommonJS file among the placed files, loaded when a module first imports it.
 */
export function seaLibrary(name: string): Record<string, unknown> {
  return createRequire(seaFilename)(`../lib/${name}.cjs`);
}
