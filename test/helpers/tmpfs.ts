import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { afterEach } from "vitest";

const mounted: string[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) {
    try {
      execFileSync("umount", ["-l", m], { stdio: "ignore" });
    } catch {
      // already gone
    }
  }
});

/** Whether this process may mount a tmpfs (root, with mount(8) available). */
export const canMountTmpfs: boolean = (() => {
  if (process.getuid?.() !== 0) return false;
  const probe = fs.mkdtempSync("/tmp/kcache-tmpfs-probe-");
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { stdio: "ignore" });
    execFileSync("umount", [probe], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
})();

/**
 * Mounts a tmpfs of `size` (e.g. "4m") on `dir` (created), unmounted after the test: a disk that fills
 * up, or with `options` ("noatime", "relatime") one whose access times behave as asked.
 */
export function mountTmpfs(dir: string, size: string, options?: string): void {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}${options ? `,${options}` : ""}`, "tmpfs", dir]);
  mounted.push(dir);
}

/** Changes the size of a tmpfs mounted by `mountTmpfs`. */
export function resizeTmpfs(dir: string, size: string): void {
  execFileSync("mount", ["-o", `remount,size=${size}`, dir]);
}
