import sea from "node:sea";
import vm from "node:vm";

/*
 * The single executable's scripts that are assets beside its main script (scripts/build-sea.mjs),
 * each a CommonJS module's function: the whole CLI (full-cli.ts), and the packages the start-up part
 * imports only now and then (YAML and zod where kcache.yml's answer is not kept, env-ci for CIs
 * kcache does not read itself). Left out of the main script, their text is not in every run's
 * start-up snapshot.
 */

/**
 * The whole CLI's script, and V8's code cache of it made by the build with the executable's own Node
 * after a rehearsed `kcache restore` (scripts/sea-rehearsal.mjs; empty when cross-built).
 */
export const FULL_CLI_ASSET = "full-cli.cjs";
export const FULL_CLI_CACHE_ASSET = "full-cli.cache";

export type FullCli = typeof import("./full-cli.js");

/**
 * Compiles and loads a script, the code cache sparing the parse of it where V8 takes it (a cache
 * made by another build or under other V8 flags, NODE_OPTIONS', is refused, and the script compiles
 * from its source: slower, the same). `require` is the executable's own (built-in modules; the
 * bundles load the placed libraries by path).
 */
export function loadScript(source: string, cache: Buffer, filename: string, req: NodeJS.Require): unknown {
  const script = new vm.Script(source, { filename, cachedData: cache.length ? cache : undefined });
  const wrapper = script.runInThisContext() as (
    exports: object,
    require: NodeJS.Require,
    module: { exports: unknown },
  ) => void;
  const module = { exports: {} };
  wrapper(module.exports, req, module);
  return module.exports;
}

const packages = new Map<string, unknown>();

/**
 * Marks an ES package's namespace for the build's __toESM (build-sea.mjs's ONE_VIEW_PER_MODULE): an
 * import of it takes the namespace as it is, `default` its default export. Node's view of a
 * CommonJS module (the module itself as `default`) would hand `import leven from "leven"` the
 * namespace, not the function.
 */
const ES_MODULE_NAMESPACE = Symbol.for("kcache.esModuleNamespace");

/**
 * The package `name` of the start-up part, from its asset (the build names it package/<name>.cjs),
 * once; `esm`: an ES package, whose exports are its namespace.
 */
export function seaPackage(name: string, esm = false): unknown {
  if (!packages.has(name)) {
    const file = `package/${name.replace(/\//g, "+")}.cjs`;
    const source = Buffer.from(sea.getAsset(file)).toString("utf8");
    const exports = loadScript(source, Buffer.alloc(0), file, require);
    if (esm && exports && typeof exports === "object")
      Object.defineProperty(exports, ES_MODULE_NAMESPACE, { value: true });
    packages.set(name, exports);
  }
  return packages.get(name);
}
