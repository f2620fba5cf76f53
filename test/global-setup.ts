import { execFileSync, spawnSync } from "node:child_process";
import path from "node:path";
import { runTmpdir } from "./helpers/run-tmpdir.js";

/** What the suite runs besides Node, and the Debian package of each. */
const TOOLS: [string, string][] = [
  ["zstd", "zstd"],
  ["tar", "tar"],
  ["git", "git"],
  ["python3", "python3"],
  ["chromium", "chromium"],
  // Ceph's RADOS Gateway: the S3 server that honours conditional writes (test/helpers/ceph-rgw.ts).
  ["radosgw", "radosgw"],
  ["ceph-mon", "ceph-mon"],
  ["ceph-osd", "ceph-osd"],
];

/** The install line the README's quick start gives. */
export const INSTALL_LINE =
  "apt-get update && apt-get install -y zstd tar git python3 python3-venv chromium && apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd";

/**
 * Stops the suite in its first seconds when a system tool it needs is missing (rather than failing
 * midway), then builds build/: CLI tests run the real bin/kcache.js, so the build must match the
 * source under test.
 */
export default function setup(): () => void {
  const missing = TOOLS.filter(
    ([cmd]) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status !== 0,
  );
  if (missing.length) {
    throw new Error(
      `the test suite needs ${missing.map(([c]) => c).join(", ")}, not found on PATH; install with: ${INSTALL_LINE} (on Debian/Ubuntu; .ci/run does this)`,
    );
  }
  const root = path.resolve(import.meta.dirname, "..");
  execFileSync(
    process.execPath,
    [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: root,
      stdio: "inherit",
    },
  );
  // bin/kcache.js runs the bundled CLI when build/cli/ exists: it must be this source's too.
  execFileSync(process.execPath, [path.join(root, "scripts/bundle-cli.mjs")], {
    cwd: root,
    stdio: "inherit",
  });
  return runTmpdir("kcache-tests");
}
