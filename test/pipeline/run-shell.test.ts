import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";
import { tempDir } from "../helpers/sandbox.js";

/** A PATH holding only these of this machine's programs (a slim container): sh and the real Python. */
function onlyPath(...programs: ("sh" | "python3")[]): string {
  const bin = tempDir("slim-path");
  const python = execFileSync("python3", ["-c", "import sys; print(sys.executable)"]).toString().trim();
  const real = { sh: "/bin/sh", python3: python };
  for (const p of programs) fs.symlinkSync(fs.realpathSync(real[p]), path.join(bin, p));
  return bin;
}

describe("kcache run where PATH has no bash", () => {
  const yml = (store: string) =>
    `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  path: ${store}\nkey:\n  prefix: slim\nprofiles:\n  p:\n    commands:\n      - name: hello\n        run: echo "ran in $0" > said.txt\n`;

  it("says so before anything runs, and runs the commands with sh", async () => {
    const p = project();
    fs.writeFileSync(path.join(p.dir, "kcache.yml"), yml(p.store));
    const r = await runCli(["run", "--profile", "p", "--revision", "a".repeat(40)], {
      env: { ...p.env, PATH: onlyPath("sh", "python3") },
      cwd: p.dir,
    });
    expect(r.code, r.stderr).toBe(0);
    const warning = r.stderr.indexOf("bash is not on PATH: the profile's commands run with sh -c");
    expect(warning).toBeGreaterThanOrEqual(0);
    expect(r.stderr).not.toContain("python probe failed");
    // Before the restore said anything, and before the command ran.
    expect(warning).toBeLessThan(r.stderr.indexOf("entries were in the cache folders"));
    expect(warning).toBeLessThan(r.stderr.indexOf("hello:"));
    expect(fs.readFileSync(path.join(p.dir, "said.txt"), "utf8")).toBe("ran in sh\n");
  });

  it("with neither bash nor sh: exit 2 at once, naming the fix", async () => {
    const p = project();
    fs.writeFileSync(path.join(p.dir, "kcache.yml"), yml(p.store));
    const r = await runCli(["run", "--profile", "p", "--revision", "a".repeat(40)], {
      env: { ...p.env, PATH: onlyPath("python3") },
      cwd: p.dir,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/neither bash nor sh is on PATH: .*install bash/);
    expect(fs.existsSync(path.join(p.dir, "said.txt"))).toBe(false);
  });
});
