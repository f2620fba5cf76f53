// What kcache's bundles share (scripts/bundle-action.mjs, scripts/bundle-cli.mjs): ESM for Node 20,
// zstd-napi left out (a native addon, loaded at run time where it is installed), and a `require`,
// `__filename` and `__dirname` for the CommonJS dependencies that use them (@bokuweb/zstd-wasm reads
// its zstd.wasm from `__dirname`: copyZstdWasm puts one beside the bundle). `header` is a comment
// line put above that banner.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

export function nodeEsm(header = "") {
  return {
    bundle: true,
    // Module paths as the checkout sees them: a worktree whose node_modules links to another
    // checkout's wrote ../main/node_modules/... into dist/, a diff main's freshness test fails on.
    preserveSymlinks: true,
    platform: "node",
    target: "node20",
    format: "esm",
    external: ["zstd-napi"],
    legalComments: "none",
    // Only where a module uses them unbound (some bundled ES modules declare their own __dirname).
    define: { __filename: "__kcacheFilename", __dirname: "__kcacheDirnameOf" },
    logLevel: "warning",
    banner: {
      js: [
        header,
        "import { createRequire as __kcacheCreateRequire } from 'node:module';",
        "import { fileURLToPath as __kcacheFileURLToPath } from 'node:url';",
        "import { dirname as __kcacheDirname } from 'node:path';",
        "const require = __kcacheCreateRequire(import.meta.url);",
        "const __kcacheFilename = __kcacheFileURLToPath(import.meta.url);",
        "const __kcacheDirnameOf = __kcacheDirname(__kcacheFilename);",
      ].join(" "),
    },
  };
}

/** Copies the WebAssembly zstd (the engine of last resort, src/pack/zstd/portable.ts) into `dir`. */
export function copyZstdWasm(dir) {
  const main = createRequire(import.meta.url).resolve("@bokuweb/zstd-wasm");
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(path.dirname(main), "zstd.wasm"), path.join(dir, "zstd.wasm"));
}
