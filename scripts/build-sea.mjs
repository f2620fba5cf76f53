#!/usr/bin/env node
// Builds kcache as a single executable for linux-x64 or linux-arm64 (`npm run build:sea`; docs/releasing.md):
// Node.js's single executable application, the CLI bundled into two CommonJS scripts and injected
// into a copy of the node binary with postject, and beside it its bill of materials. The main script
// is the CLI's start-up part (src/cli/single-executable/entry.ts: `key`, `stack`, `--version`,
// `--help`); the whole CLI is an asset beside it (full-cli.ts), compiled by the other commands.
//
//   node scripts/build-sea.mjs [--arch x64|arm64] [--node <node binary>] [--out build/sea]
//
// The node binary must be this Node's version (the blob's format is the version's): by default this
// one for its own architecture, else node-linux-<arch>@<this version> from the npm registry (the
// official binaries, repacked). Built for this machine's architecture, the blob is made by that
// binary and carries a start-up snapshot of the start-up part: its modules loaded, Node's built-in
// modules they use compiled (src/cli/single-executable/snapshot.ts), the functions a rehearsed
// `kcache key` called compiled, and the whole CLI a V8 code cache of a rehearsed `kcache restore`
// (scripts/sea-rehearsal.mjs; bench/run-sea-bench.ts measures `kcache key` against `node -e 0`). Built for another architecture
// it cannot (V8 makes a snapshot, as a code cache, on the machine it will run on): the scripts are
// compiled and loaded as they start.
//
// Writes to --out: kcache-linux-<arch> (the executable), kcache-linux-<arch>.cdx.json (CycloneDX:
// every bundled npm package with its version and license, and Node.js) and
// kcache-linux-<arch>.licenses.txt (their license texts).
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { copyZstdWasm, nodeEsm } from "./esbuild-node.mjs";
import { rehearsedCache, startupLoader } from "./sea-rehearsal.mjs";
import { bundledPackageDirs, bundledPackages, cycloneDx, noticesText } from "./sea-sbom.mjs";

/** The fuse Node.js checks to know it carries a blob (Node's docs name it; postject flips its last byte). */
const FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";
const IMPORT_META_URL = path.resolve("src/cli/single-executable/import-meta-url.ts");
const SCRIPT_ASSETS = path.resolve("src/cli/single-executable/script-assets.ts");
/**
 * The packages the start-up part's snapshot loads (snapshot.ts's loadAhead), bundled into its main
 * script; its other packages are assets of their own (packagesWrapped).
 */
const STARTUP_PACKAGES = ["commander"];
/**
 * Libraries kept out of the main script, each a CommonJS file of its own among the placed files,
 * loaded when a module first imports it (import-meta-url.ts's seaLibrary): the S3 and Azure SDKs and
 * @actions/core (with undici) are 2.1 of the script's 3.6 MB, which every run would otherwise read
 * into its start-up snapshot (~6 ms of CPU per run measured here, for code only S3, GitHub's cache or
 * `kcache run` on a runner use). By package: the library's file and its name for the package there.
 */
const LIBRARIES = {
  aws: { "@aws-sdk/client-s3": "s3", "@aws-sdk/lib-storage": "storage", "@smithy/node-http-handler": "http" },
  azure: { "@azure/storage-blob": "blob" },
  actions: { "@actions/core": "core" },
};
/**
 * What makes a script of the executable's assets a CommonJS module's function, as script-assets.ts's
 * loadScript compiles and calls it: the whole CLI and the start-up part's packages.
 */
const SCRIPT_WRAPPER = { js: "(function (exports, require, module) {" };
const SCRIPT_WRAPPER_END = { js: "})" };
/** The whole CLI's script and its code cache, as src/cli/single-executable/script-assets.ts names them. */
const FULL_CLI_ASSET = "full-cli.cjs";
const FULL_CLI_CACHE_ASSET = "full-cli.cache";
/**
 * The start-up part's lazy imports that it runs: the CLI, `kcache key` and `kcache stack`, kcache.yml's
 * validation where no answer is kept, and env-ci for CIs kcache does not read itself. Its other lazy
 * imports (the other commands, the store SDKs) run in the whole CLI only: the build leaves them out
 * of the start-up part, and fails where that part gains a lazy import not named here or there.
 */
const STARTUP_IMPORTS = [
  "src/cli/main.ts",
  "src/cli/commands/key.ts",
  "src/cli/commands/stack.ts",
  "src/config/load.ts",
  "env-ci",
];
const WHOLE_CLI_IMPORTS = /^(src\/cli\/commands\/[a-z-]+\.ts|@aws-sdk\/.*|@azure\/.*|@smithy\/.*)$/;
/**
 * esbuild's __toESM, as it writes it minified: the view an ES module's import takes of a CommonJS
 * module (Node's built-in modules among them), each a new object with a getter per export, made at
 * every import: 214 imports, ~3,400 getters that every run deserialized from the snapshot.
 */
const ESBUILD_TO_ESM =
  'var __toESM=(mod,isNodeMode,target)=>(target=mod!=null?__create(__getProtoOf(mod)):{},__copyProps(isNodeMode||!mod||!mod.__esModule?__defProp(target,"default",{value:mod,enumerable:!0}):target,mod))';
/**
 * The same view, one per module and kind, a Proxy reading the module's exports as they are (live, as
 * the getters did): `default` the module itself where esbuild's was, any other name the module's own.
 * Where the module has a `default` of its own that a Proxy may not answer otherwise (not configurable),
 * esbuild's copy serves. An ES package's namespace loaded from its asset (script-assets.ts's
 * seaPackage marks it) is its own view: its `default` is the package's default export.
 */
const ONE_VIEW_PER_MODULE =
  'var __kcacheViews=new WeakMap,__toESMCopy=(mod,isNodeMode,target)=>(target=mod!=null?__create(__getProtoOf(mod)):{},__copyProps(isNodeMode||!mod||!mod.__esModule?__defProp(target,"default",{value:mod,enumerable:!0}):target,mod)),__toESM=(mod,isNodeMode)=>{if(mod!=null&&mod[Symbol.for("kcache.esModuleNamespace")])return mod;if(mod==null||typeof mod!="object"&&typeof mod!="function"||__getOwnPropDesc(mod,"default")?.configurable===!1)return __toESMCopy(mod,isNodeMode);let d=isNodeMode||!mod.__esModule?1:0,v=__kcacheViews.get(mod);v||__kcacheViews.set(mod,v=[]);return v[d]??=new Proxy(mod,{get:(t,k)=>d&&k==="default"?mod:t[k]})}';

/** Built-in modules the start-up part's commands use only now and then, loaded at first use (builtinsOnFirstUse). */
const LAZY_BUILTINS = ["node:child_process"];
const ON_FIRST_USE =
  "var __kcacheOnFirstUse=(id,m)=>new Proxy({},{get:(_,k)=>(m??=require(id))[k],has:(_,k)=>k in(m??=require(id))});";
/** ELF e_machine of each architecture: the binary given must be the one asked for. */
const ELF_MACHINE = { x64: 0x3e, arm64: 0xb7 };
/** What Node says as it builds a snapshot with built-in modules it has not tested in one (snapshot.ts's tests run them). */
const UNVERIFIED =
  /It's not yet fully verified|It may still work|To request support|--trace-warnings|ExperimentalWarning/;

const { values: opts } = parseArgs({
  options: {
    arch: { type: "string", default: process.arch },
    node: { type: "string" },
    out: { type: "string", default: "build/sea" },
  },
});
const arch = opts.arch;
if (!(arch in ELF_MACHINE)) throw new Error(`--arch ${arch}: kcache is built for x64 or arm64`);
const native = arch === process.arch;
const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
const out = path.resolve(opts.out);
const work = path.join(out, `work-${arch}`);
fs.rmSync(work, { recursive: true, force: true });
fs.mkdirSync(work, { recursive: true });

const node = path.resolve(opts.node ?? (native ? process.execPath : registryNode(arch, out)));
checkNode(node);

// The files kcache reads as files (src/cli/single-executable/runtime-files.ts places them), laid out
// as in the npm package: main.js would lie in cli/, the hooks in python/, package.json at the top;
// and in lib/ the libraries kept out of the main script.
const files = path.join(work, "files");
const worker = await build({
  ...nodeEsm(),
  entryPoints: ["src/pack/threads/pack-worker.ts"],
  outfile: path.join(files, "cli", "pack-worker.js"),
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
});
copyZstdWasm(path.join(files, "cli"));
for (const dir of ["kcache_hook", "kcache_pickle", "kcache_prewarm"])
  for (const f of fs.readdirSync(path.join("python", dir)).filter((n) => n.endsWith(".py")))
    copy(path.join("python", dir, f), path.join(files, "python", dir, f));
// "type": "module": the worker is an ES module; name and version: what src/version.ts reads.
fs.writeFileSync(
  path.join(files, "package.json"),
  `${JSON.stringify({ name: "kcache", version: pkg.version, type: "module", private: true })}\n`,
);
const libraries = await Promise.all(
  Object.entries(LIBRARIES).map(([name, exports]) => buildLibrary(name, exports)),
);

// The start-up part (entry.ts), the main script the snapshot is made of; and the whole CLI
// (full-cli.ts), an asset of its own, compiled by the commands that need it.
const packageAssets = new Map();
const startup = await build({
  ...cliBundle("src/cli/single-executable/entry.ts", path.join(work, "main.cjs")),
  plugins: [startupPart(), packagesWrapped(packageAssets)],
});
const full = await build({
  ...cliBundle("src/cli/single-executable/full-cli.ts", path.join(work, FULL_CLI_ASSET)),
  plugins: [libraryStubs()],
  banner: SCRIPT_WRAPPER,
  footer: SCRIPT_WRAPPER_END,
});
for (const script of [path.join(work, "main.cjs"), path.join(work, FULL_CLI_ASSET)]) oneViewPerModule(script);
builtinsOnFirstUse(path.join(work, "main.cjs"));
// V8's code cache of the whole CLI, made below by the executable's own Node (none when cross-built).
const fullCache = path.join(work, FULL_CLI_CACHE_ASSET);
if (!native) fs.writeFileSync(fullCache, "");

const listed = {};
const sha256 = {};
const digest = createHash("sha256");
for (const rel of walk(files)) {
  const bytes = fs.readFileSync(path.join(files, rel));
  listed[rel] = bytes.length;
  sha256[rel] = createHash("sha256").update(bytes).digest("hex");
  digest.update(`${rel}\0${bytes.length}\0`).update(bytes);
}
const runtimeFiles = { id: `${pkg.version}-${digest.digest("hex").slice(0, 16)}`, files: listed, sha256 };
fs.writeFileSync(path.join(work, "runtime-files.json"), JSON.stringify(runtimeFiles));

const assets = {
  "runtime-files.json": path.join(work, "runtime-files.json"),
  [FULL_CLI_ASSET]: path.join(work, FULL_CLI_ASSET),
  [FULL_CLI_CACHE_ASSET]: fullCache,
  ...Object.fromEntries(packageAssets),
  ...Object.fromEntries(Object.keys(listed).map((rel) => [rel, path.join(files, rel)])),
};
// Each script's code cache from a rehearsed command (scripts/sea-rehearsal.mjs), by the executable's
// own Node: the whole CLI's from `kcache restore` missing; the start-up part's from `kcache key`, its
// main script compiling it from that cache as the snapshot is made, so the snapshot keeps key's
// functions compiled.
let main = path.join(work, "main.cjs");
if (native) {
  const mainFile = path.join(files, "cli", "main.js");
  const rehearse = (script, command, cache) =>
    rehearsedCache({ node, script, assets, command, mainFile, cache, folder: work });
  rehearse(path.join(work, FULL_CLI_ASSET), "restore", fullCache);
  const script = path.join(work, "startup.cjs");
  fs.writeFileSync(script, `${SCRIPT_WRAPPER.js}${fs.readFileSync(main, "utf8")}\n${SCRIPT_WRAPPER_END.js}`);
  const cache = path.join(work, "startup.cache");
  rehearse(script, "key", cache);
  main = path.join(work, "loader.cjs");
  fs.writeFileSync(main, startupLoader(script, cache));
}

const blob = path.join(work, "sea-prep.blob");
const config = { main, output: blob, disableExperimentalSEAWarning: true, useSnapshot: native, assets };
fs.writeFileSync(path.join(work, "sea-config.json"), JSON.stringify(config, null, 2));
// By the binary it goes into, in the folder of the files: the snapshot's modules load as if from there.
const made = spawnSync(
  native ? node : process.execPath,
  ["--experimental-sea-config", path.join(work, "sea-config.json")],
  { cwd: files, encoding: "utf8", env: snapshotEnvironment(process.env) },
);
const said = made.stderr
  .split("\n")
  .filter((l) => l && !UNVERIFIED.test(l))
  .join("\n");
if (made.status !== 0)
  throw new Error(`the blob was not made (${made.status ?? made.signal}):\n${made.stderr}`);
if (said) process.stderr.write(`${said}\n`);

const exe = path.join(out, `kcache-linux-${arch}`);
fs.rmSync(exe, { force: true });
fs.copyFileSync(node, exe);
fs.chmodSync(exe, 0o755);
const blobBytes = fs.readFileSync(blob);
const { inject } = createRequire(import.meta.url)("postject");
await inject(exe, "NODE_SEA_BLOB", blobBytes, { sentinelFuse: FUSE });
checkInjected(exe, blobBytes);

const metafiles = [startup.metafile, full.metafile, worker.metafile, ...libraries.map((l) => l.metafile)];
const packages = bundledPackages(bundledPackageDirs(metafiles));
const sbom = cycloneDx({
  version: pkg.version,
  license: pkg.license,
  arch,
  nodeVersion: process.version,
  packages,
});
fs.writeFileSync(`${exe}.cdx.json`, `${JSON.stringify(sbom, null, 2)}\n`);
const nodeLicense = [path.join(path.dirname(node), "..", "LICENSE"), "/usr/share/doc/nodejs/LICENSE"].find(
  (f) => fs.existsSync(f),
);
const nodeNotice = {
  name: "node",
  version: process.version.slice(1),
  license: "MIT",
  text: nodeLicense
    ? fs.readFileSync(nodeLicense, "utf8")
    : "See https://github.com/nodejs/node/blob/main/LICENSE",
};
fs.writeFileSync(`${exe}.licenses.txt`, noticesText([nodeNotice, ...packages]));
fs.rmSync(work, { recursive: true, force: true });
const mb = (fs.statSync(exe).size / 1e6).toFixed(1);
console.log(
  `${path.relative(process.cwd(), exe)}: ${mb} MB, Node ${process.version}, ${native ? "with" : "without"} a start-up snapshot; ${packages.length} bundled packages in ${path.basename(exe)}.cdx.json`,
);

/** lib/<name>.cjs: the packages of one library, as the namespaces `exports` names. */
function buildLibrary(name, exports) {
  return build({
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    stdin: {
      contents: Object.entries(exports)
        .map(([pkg, as]) => `export * as ${as} from ${JSON.stringify(pkg)};`)
        .join("\n"),
      resolveDir: process.cwd(),
      sourcefile: `${name}-library.js`,
    },
    outfile: path.join(files, "lib", `${name}.cjs`),
    legalComments: "none",
    minifyWhitespace: true,
    minifySyntax: true,
    // A file of its own: its ES modules' import.meta.url is that file's.
    define: { "import.meta.url": "__kcacheLibraryUrl" },
    banner: { js: "const __kcacheLibraryUrl = require('node:url').pathToFileURL(__filename).href;" },
    logLevel: "warning",
    metafile: true,
  });
}

/** The main script's modules for LIBRARIES' packages: each the library's namespace for it. */
function libraryStubs() {
  const byPackage = new Map(
    Object.entries(LIBRARIES).flatMap(([name, exports]) =>
      Object.entries(exports).map(([pkg, as]) => [pkg, { name, as }]),
    ),
  );
  return {
    name: "sea-libraries",
    setup(b) {
      b.onResolve({ filter: /^@/ }, (args) =>
        byPackage.has(args.path) ? { path: args.path, namespace: "sea-library" } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: "sea-library" }, (args) => {
        const { name, as } = byPackage.get(args.path);
        return {
          contents: `module.exports = require(${JSON.stringify(IMPORT_META_URL)}).seaLibrary(${JSON.stringify(name)}).${as};`,
          loader: "js",
          resolveDir: process.cwd(),
        };
      });
    },
  };
}

/** esbuild's options for one of the executable's two CLI scripts. */
function cliBundle(entry, outfile) {
  return {
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    entryPoints: [entry],
    outfile,
    // Where the npm package finds it installed: a native addon cannot load from inside the executable.
    external: ["zstd-napi"],
    legalComments: "none",
    minifyWhitespace: true,
    minifySyntax: true,
    // The executable's scripts have no file: these read where its files were placed (import-meta-url.ts).
    inject: [IMPORT_META_URL],
    define: {
      "import.meta.url": "seaImportMetaUrl",
      __filename: "seaFilename",
      __dirname: "seaDirname",
    },
    logLevel: "warning",
    metafile: true,
  };
}

/**
 * The start-up part's lazy imports of what only the whole CLI runs, each a module that throws: the
 * start-up part never runs them (entry.ts sends their commands to the whole CLI), and one that did
 * would be a bug to report, not a command run half.
 */
function startupPart() {
  return {
    name: "sea-startup-part",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind !== "dynamic-import") return undefined;
        // A module of kcache's as its source file, a package by its name.
        const id = args.path.startsWith(".")
          ? path.relative(process.cwd(), path.resolve(args.resolveDir, args.path)).replace(/\.js$/, ".ts")
          : args.path;
        if (STARTUP_IMPORTS.includes(id)) return undefined;
        if (!WHOLE_CLI_IMPORTS.test(id))
          return {
            errors: [
              {
                text: `${id} (imported lazily by ${path.relative(process.cwd(), args.importer)}): name it in build-sea.mjs's STARTUP_IMPORTS if the start-up part's commands run it, else in WHOLE_CLI_IMPORTS`,
              },
            ],
          };
        return { path: args.path, namespace: "sea-whole-cli-only" };
      });
      b.onLoad({ filter: /.*/, namespace: "sea-whole-cli-only" }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`${args.path} is not in the single executable's start-up part (scripts/build-sea.mjs)`)});`,
        loader: "js",
      }));
    },
  };
}

/**
 * Makes each require of LAZY_BUILTINS in `file` a view that loads the module at its first use: the
 * start-up part's snapshot then holds none of them (commander and the stack probes import
 * node:child_process as they load; `kcache key` with the stack's answer kept starts no process).
 */
function builtinsOnFirstUse(file) {
  let text = fs.readFileSync(file, "utf8");
  for (const id of LAZY_BUILTINS)
    text = text.replaceAll(`require(${JSON.stringify(id)})`, `__kcacheOnFirstUse(${JSON.stringify(id)})`);
  const strict = '"use strict";';
  const at = text.startsWith(strict) ? strict.length : 0;
  fs.writeFileSync(file, text.slice(0, at) + ON_FIRST_USE + text.slice(at));
}

/** Replaces esbuild's __toESM in `file` with ONE_VIEW_PER_MODULE; fails where esbuild writes it otherwise. */
function oneViewPerModule(file) {
  const text = fs.readFileSync(file, "utf8");
  if (text.split(ESBUILD_TO_ESM).length !== 2)
    throw new Error(
      `${file}: esbuild's __toESM is not as build-sea.mjs's ESBUILD_TO_ESM has it (another esbuild?): update it and ONE_VIEW_PER_MODULE`,
    );
  fs.writeFileSync(file, text.replace(ESBUILD_TO_ESM, ONE_VIEW_PER_MODULE));
}

/**
 * Each package the start-up part imports, bundled on its own into one CommonJS module: esbuild
 * hoists an ES module's functions to the top of the script, so packages the start-up part loads only
 * now and then (env-ci for CIs kcache does not read itself; YAML and zod where kcache.yml's answer is
 * not kept) put their functions into every run's snapshot. Those (all but STARTUP_PACKAGES) are
 * assets of their own, loaded as they are first imported (script-assets.ts's seaPackage), so that
 * their text is not in the snapshot either: `packageAssets` gets each one's file.
 */
function packagesWrapped(packageAssets) {
  const bundles = new Map();
  const libraries = new Set(Object.values(LIBRARIES).flatMap((exports) => Object.keys(exports)));
  return {
    name: "sea-packages-wrapped",
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith("node:") || args.namespace !== "file") return undefined;
        // Loaded from the placed files, which the start-up part neither places nor checks.
        if (libraries.has(args.path))
          return {
            errors: [
              {
                text: `${args.path} (imported by ${path.relative(process.cwd(), args.importer)}): a library of the whole CLI's, which the start-up part cannot load; import it lazily, where only the whole CLI's commands reach it`,
              },
            ],
          };
        return { path: args.path, namespace: "sea-package", pluginData: { resolveDir: args.resolveDir } };
      });
      b.onLoad({ filter: /.*/, namespace: "sea-package" }, async (args) => {
        if (!bundles.has(args.path))
          bundles.set(
            args.path,
            build({
              stdin: {
                contents: `module.exports = require(${JSON.stringify(args.path)});`,
                resolveDir: args.pluginData.resolveDir,
              },
              bundle: true,
              platform: "node",
              target: "node20",
              format: "cjs",
              write: false,
              external: ["zstd-napi"],
              legalComments: "none",
              // A script of its own: its names can be shortened, and its text is smaller.
              minify: true,
              logLevel: "warning",
              metafile: true,
            }),
          );
        const bundled = await bundles.get(args.path);
        const text = bundled.outputFiles[0].text;
        // An ES package (env-ci, leven): its CommonJS bundle's exports are its namespace, default and all.
        const entry = bundled.metafile.inputs["<stdin>"]?.imports[0]?.path;
        const esm = bundled.metafile.inputs[entry]?.format === "esm";
        if (STARTUP_PACKAGES.includes(args.path))
          return { contents: text, loader: "js", resolveDir: args.pluginData.resolveDir };
        const file = path.join(work, "package", `${args.path.replace(/\//g, "+")}.cjs`);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, `${SCRIPT_WRAPPER.js}${text}\n${SCRIPT_WRAPPER_END.js}`);
        packageAssets.set(`package/${path.basename(file)}`, file);
        return {
          contents: `module.exports = require(${JSON.stringify(SCRIPT_ASSETS)}).seaPackage(${JSON.stringify(args.path)}, ${esm});`,
          loader: "js",
          resolveDir: process.cwd(),
        };
      });
    },
  };
}

/**
 * The environment the snapshot is made in: without NODE_OPTIONS (V8 flags there would make a
 * snapshot no run can use) and NODE_DEBUG (Node decides each debug section as it is first used, and
 * one first used as the snapshot is made would stay as the build machine had it in every run).
 */
function snapshotEnvironment(env) {
  const { NODE_OPTIONS: _, NODE_DEBUG: __, ...rest } = env;
  return rest;
}

/** Every file under `dir`, as paths relative to it with forward slashes, sorted. */
function walk(dir, rel = "") {
  return fs
    .readdirSync(path.join(dir, rel), { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? walk(dir, path.posix.join(rel, e.name)) : [path.posix.join(rel, e.name)],
    )
    .sort();
}

function copy(from, to) {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
}

/** node-linux-<arch>@<this version> from the npm registry, unpacked once into `dir`. */
function registryNode(arch, dir) {
  const version = process.version.slice(1);
  const home = path.join(dir, `node-linux-${arch}-${version}`);
  const bin = path.join(home, "package", "bin", "node");
  if (fs.existsSync(bin)) return bin;
  fs.mkdirSync(home, { recursive: true });
  const spec = `node-linux-${arch}@${version}`;
  const [tgz] = JSON.parse(
    execFileSync("npm", ["pack", spec, "--json", "--pack-destination", home], {
      cwd: home,
      encoding: "utf8",
    }),
  );
  execFileSync("tar", [
    "-xzf",
    path.join(home, tgz.filename),
    "-C",
    home,
    "package/bin/node",
    "package/LICENSE",
  ]);
  fs.rmSync(path.join(home, tgz.filename));
  return bin;
}

/** The binary is an ELF executable of `arch` that has never carried a blob, and, when it can run here, this Node. */
function checkNode(file) {
  const head = Buffer.alloc(20);
  const fd = fs.openSync(file, "r");
  fs.readSync(fd, head, 0, 20, 0);
  fs.closeSync(fd);
  if (head.readUInt32BE(0) !== 0x7f454c46 || head.readUInt16LE(18) !== ELF_MACHINE[arch])
    throw new Error(`${file} is not a linux-${arch} executable`);
  if (!fs.readFileSync(file).includes(`${FUSE}:0`))
    throw new Error(`${file} has no single-executable fuse, or carries a blob already`);
  if (native) {
    const version = execFileSync(file, ["--version"], { encoding: "utf8" }).trim();
    if (version !== process.version)
      throw new Error(
        `${file} is Node ${version}; the blob is made by this Node, ${process.version}: run with that one`,
      );
  }
}

/** The executable carries the blob, and its fuse says so (what Node checks as it starts). */
function checkInjected(file, blobBytes) {
  const bytes = fs.readFileSync(file);
  if (!bytes.includes(`${FUSE}:1`) || !bytes.includes(blobBytes.subarray(0, 4096)))
    throw new Error(`${file}: postject left no blob in it`);
}
