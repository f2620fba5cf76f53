import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * Gives a test run a temporary folder of its own: TMPDIR points into it for the workers, which start
 * after the global setup, and for every process they spawn (the CLI, Python, Chromium, zstd), so
 * whatever a test or a killed process leaves behind goes with the folder at the end: the suite
 * leaves /tmp as it found it. Returns the teardown.
 */
export function runTmpdir(label: string): () => void {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `${label}-`));
  const before = process.env.TMPDIR;
  process.env.TMPDIR = root;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    try {
      fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
    } catch (e) {
      // A filesystem a test mounted and could not unmount: say so rather than fail a passed run.
      process.stderr.write(`kcache tests: could not remove ${root}: ${(e as Error).message}\n`);
    }
  };
}
