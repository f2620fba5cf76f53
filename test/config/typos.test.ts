import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

/** kcache key in a folder with this kcache.yml (or none), as a user runs it. */
async function key(yml: string | null, args: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const dir = tempDir("typos");
  if (yml !== null) fs.writeFileSync(path.join(dir, "kcache.yml"), yml);
  const r = await runCli(["key", ...args], {
    env: { PATH: process.env.PATH, HOME: dir, GITHUB_REF: "refs/heads/main", ...env },
    cwd: dir,
  });
  return { ...r, dir };
}

describe("typos get an error naming the fix", () => {
  it.each(["s3:/bucket/p", "s3//bucket/p", "s3:bucket/p", "s3:///bucket/p"])(
    "%s is an error (exit 2), never a local folder",
    async (store) => {
      for (const r of [await key(null, ["--store", store]), await key(null, [], { KCACHE_STORE: store })]) {
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(/not a store URL; write s3:\/\/bucket\/p \(two slashes after "s3:"\)/);
        expect(fs.readdirSync(r.dir).filter((f) => f.startsWith("s3"))).toEqual([]);
      }
      const yml = await key(
        `caches:\n  - {name: t, kind: triton, path: /tmp/x}\nstore: { path: "${store}" }\n`,
      );
      expect(yml.code).toBe(2);
      expect(yml.stderr).toMatch(/store\.path=.*not a store URL/);
    },
  );

  it("a missing caches: comes after the mistake the user made", async () => {
    const r = await key("store: {type: s3, bukket: x}\n");
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines[0]).toMatch(/store\.bucket: missing, and "bukket" is there: did you mean "bucket"\?/);
    expect(lines.at(-1)).toMatch(/: caches: /);
  });

  it("a list item's error names its field, not 'Invalid input'", async () => {
    const r = await key(
      "caches:\n  - {name: t, kind: triton, path: /tmp/x}\nprofiles:\n  p:\n    commands:\n      - {name: a, runn: x}\n",
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /profiles\.p\.commands\[0\]\.run: missing, and "runn" is there: did you mean "run"\?/,
    );
    expect(r.stderr).not.toMatch(/Invalid input$/m);
  });

  it("a command without run says run, and nothing the user did not write", async () => {
    const r = await key(
      "caches:\n  - {name: t, kind: triton, path: /tmp/x}\nprofiles:\n  p:\n    commands:\n      - name: a\n",
    );
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/kcache\.yml: profiles\.p\.commands\[0\]\.run: missing; expected string$/),
    ]);
  });

  it("a misspelt timezone is caught when kcache.yml is loaded, by any command", async () => {
    const r = await key(
      'caches:\n  - {name: t, kind: triton, path: /tmp/x}\nprofiles:\n  p:\n    commands: [{name: a, run: x}]\n    github:\n      prewarm: {cron: "0 0 * * 1", timezone: Asia/Shangai}\n',
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /profiles\.p\.github\.prewarm\.timezone: "Asia\/Shangai" is not an IANA time zone name: did you mean "Asia\/Shanghai"\?/,
    );
  });
});
