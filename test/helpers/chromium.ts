import { execFileSync } from "node:child_process";
import path from "node:path";

/** The DOM of a local HTML file after its scripts ran, as headless Chromium leaves it. */
export function dumpDom(file: string, profileDir: string): string {
  return execFileSync(
    "chromium",
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      `--user-data-dir=${path.join(profileDir, "chrome")}`,
      "--dump-dom",
      `file://${file}`,
    ],
    // Chromium's stderr (D-Bus and GPU noise in a container) is kept, not printed: a failure carries it.
    { timeout: 60_000, stdio: ["ignore", "pipe", "pipe"] },
  ).toString();
}
