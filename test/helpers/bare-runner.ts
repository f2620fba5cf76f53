import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The repository (as action-runner.ts's ROOT; not imported from there, so bench/ loads this without vitest). */
const ROOT = path.resolve(import.meta.dirname, "../..");

/**
 * What a bare runner or container has and lacks, made real for a test: a PATH with every program of
 * this machine's but `zstd` (Ubuntu base images and the ascendai/cann containers ship libzstd but no
 * zstd binary), the action as a runner downloads it (the repository's tracked files, as `git
 * archive` gives them: no node_modules, no build/), and a Node.js 24 beside this Node 20.
 */

/** A folder of links to every program on PATH except zstd's: use it as PATH. */
export function pathWithoutZstd(dir: string): string {
  return pathWithout(path.join(dir, "bin-no-zstd"), /zstd/, "zstd");
}

/**
 * A folder of links to every program on PATH but Node.js (node, npm, npx, corepack) and zstd: where
 * kcache's single executable runs as on a machine without either. Use it as PATH.
 */
export function pathWithoutNode(dir: string): string {
  return pathWithout(path.join(dir, "bin-no-node"), /^(node|nodejs|npm|npx|corepack)$|zstd/, "node", "zstd");
}

/** `bin` made a folder of links to every program on PATH whose name `drop` does not match; `absent` checked absent. */
function pathWithout(bin: string, drop: RegExp, ...absent: string[]): string {
  fs.mkdirSync(bin, { recursive: true });
  for (const d of (process.env.PATH ?? "").split(path.delimiter)) {
    let names: string[];
    try {
      names = fs.readdirSync(d);
    } catch {
      continue;
    }
    for (const n of names) {
      if (drop.test(n) || fs.existsSync(path.join(bin, n))) continue;
      const target = path.join(d, n);
      // pyenv's shims need pyenv itself: link the interpreter they resolve to instead.
      const real = n === "python3" ? python3Executable() : target;
      fs.symlinkSync(real, path.join(bin, n));
    }
  }
  for (const cmd of absent) {
    const probe = spawnSync("sh", ["-c", `command -v ${cmd}`], { env: { PATH: bin } });
    if (probe.status === 0) throw new Error(`${cmd} is still on the bare PATH: ${probe.stdout}`);
  }
  return bin;
}

let python: string | undefined;
function python3Executable(): string {
  python ??= execFileSync("python3", ["-c", "import sys; print(sys.executable)"]).toString().trim();
  return python;
}

/**
 * The action as a runner gets it: the repository's tracked files (as `git archive HEAD` writes
 * them, here from the working tree so that uncommitted work is tested too), without node_modules or
 * build/. A file that is built but not committed (dist/zstd.wasm, say) is missing here, as it would
 * be on a runner.
 */
export function downloadedAction(dir: string): string {
  const out = path.join(dir, "action");
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT })
    .toString()
    .split("\0")
    .filter((f) => f && fs.existsSync(path.join(ROOT, f)));
  for (const f of files) {
    fs.mkdirSync(path.dirname(path.join(out, f)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, f), path.join(out, f));
  }
  if (fs.existsSync(path.join(out, "node_modules"))) throw new Error("node_modules was archived");
  return out;
}

/**
 * A Node.js 24 binary: $KCACHE_TEST_NODE24, else one unpacked from the npm registry's
 * node-linux-<arch> package into ~/.cache/kcache-test (once; .ci/run's machine reaches the registry).
 */
export function node24(): string {
  if (process.env.KCACHE_TEST_NODE24) return process.env.KCACHE_TEST_NODE24;
  const arch = os.arch() === "arm64" ? "arm64" : "x64";
  const home = path.join(os.homedir(), ".cache", "kcache-test", `node24-${arch}`);
  const bin = path.join(home, "package", "bin", "node");
  if (fs.existsSync(bin)) return bin;
  fs.mkdirSync(home, { recursive: true });
  const tgz = execFileSync("npm", ["pack", `node-linux-${arch}@24`, "--silent", "--pack-destination", home], {
    cwd: home,
  })
    .toString()
    .trim()
    .split("\n")
    .at(-1) as string;
  execFileSync("tar", ["-xzf", path.join(home, tgz), "-C", home]);
  fs.rmSync(path.join(home, tgz));
  const version = execFileSync(bin, ["--version"]).toString().trim();
  if (!version.startsWith("v24.")) throw new Error(`${bin} is ${version}, not Node 24`);
  return bin;
}
