import { execFileSync } from "node:child_process";
import path from "node:path";

/** CLI tests run the real bin/kcache.js, so the build must match the source under test. */
export default function setup(): void {
  const root = path.resolve(import.meta.dirname, "..");
  execFileSync(
    process.execPath,
    [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
    {
      cwd: root,
      stdio: "inherit",
    },
  );
}
