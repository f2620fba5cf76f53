import vm from "node:vm";

/** The whole CLI's script (full-cli.ts), as the build bundles it: a CommonJS module's function. */
export const FULL_CLI_ASSET = "full-cli.cjs";
/** V8's code cache of that script, made by the build with the executable's own Node (empty when cross-built). */
export const FULL_CLI_CACHE_ASSET = "full-cli.cache";

export type FullCli = typeof import("./full-cli.js");

/**
 * Compiles and loads the whole CLI from its script, the code cache sparing the parse of its ~1 MB
 * where V8 takes it (a cache made by another build or under other V8 flags, NODE_OPTIONS', is
 * refused, and the script compiles from its source: slower, the same). `require` is the executable's
 * own (built-in modules; the bundle loads the placed libraries by path).
 */
export function loadFullCli(source: string, cache: Buffer, filename: string, req: NodeJS.Require): FullCli {
  const script = new vm.Script(source, { filename, cachedData: cache.length ? cache : undefined });
  const wrapper = script.runInThisContext() as (
    exports: object,
    require: NodeJS.Require,
    module: { exports: object },
  ) => void;
  const module = { exports: {} };
  wrapper(module.exports, req, module);
  return module.exports as FullCli;
}
