// What kcache's bundles share (scripts/bundle-action.mjs, scripts/bundle-cli.mjs): ESM for Node 20,
// zstd-napi left out (a native addon, loaded at run time where it is installed), and a `require` for
// the CommonJS dependencies that call it. `header` is a comment line put above that banner.
export function nodeEsm(header = "") {
  return {
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    external: ["zstd-napi"],
    legalComments: "none",
    logLevel: "warning",
    banner: {
      js: `${header}import { createRequire as __kcacheCreateRequire } from 'node:module'; const require = __kcacheCreateRequire(import.meta.url);`,
    },
  };
}
