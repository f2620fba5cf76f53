import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { validatedConfig } from "../../src/config/validated-config.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const VALID = `caches:
  - name: triton
    kind: triton
    path: /tmp/never-made/triton
key:
  prefix: bench
save:
  max-chain: 4
profiles:
  bench:
    prefix: bench-kda
    commands:
      - name: bench
        run: python bench.py --json out/result.json
    checks:
      - type: finite-positive
        file: out/result.json
        fields: [seconds]
`;

describe("kcache.yml validated once per text (config/validated-config.ts)", () => {
  it("keeps a valid answer, gives exactly what validation gives, and validates again when the text changes", async () => {
    const state = tempDir("state");
    const env = { KCACHE_STATE_DIR: state };
    const file = path.join(tempDir("repo"), "kcache.yml");
    const first = await validatedConfig(file, VALID, env);
    expect(first).toEqual(parseConfig(VALID, file));
    const kept = fs.readdirSync(path.join(state, "config"));
    expect(kept).toHaveLength(1);
    // The next command reads the kept answer: the same configuration, and nothing written again.
    const keptFile = path.join(state, "config", kept[0] as string);
    const before = fs.statSync(keptFile).mtimeMs;
    expect(await validatedConfig(file, VALID, env)).toEqual(first);
    expect(fs.statSync(keptFile).mtimeMs).toBe(before);
    // Another text (one value edited): validated again, and its own answer.
    const edited = await validatedConfig(file, VALID.replace("max-chain: 4", "max-chain: 6"), env);
    expect(edited.save["max-chain"]).toBe(6);
    expect(fs.readdirSync(path.join(state, "config"))).toHaveLength(2);
    // A damaged kept answer is never used: validated again.
    fs.writeFileSync(keptFile, "{ not json");
    expect(await validatedConfig(file, VALID, env)).toEqual(first);
    fs.writeFileSync(keptFile, "{}");
    expect(await validatedConfig(file, VALID, env)).toEqual(first);
  });

  it("never keeps an invalid file: each command names the file, the field and the fix", async () => {
    const repo = tempDir("repo");
    const state = tempDir("state");
    const cfg = path.join(repo, "kcache.yml");
    const env = { PATH: process.env.PATH, HOME: repo, KCACHE_STATE_DIR: state };
    fs.writeFileSync(cfg, VALID);
    // A command that only reads (ls, prune, stats...) keeps nothing on this machine.
    const listed = await runCli(["ls", "--store", path.join(repo, "store")], { env, cwd: repo });
    expect(listed.code, listed.stderr).toBe(0);
    expect(fs.existsSync(path.join(state, "config"))).toBe(false);
    const ok = await runCli(["key", "--revision", "a".repeat(40)], { env, cwd: repo });
    expect(ok.code, ok.stderr).toBe(0);
    fs.writeFileSync(cfg, VALID.replace("max-chain: 4", "max-chain: many"));
    for (let i = 0; i < 2; i++) {
      const bad = await runCli(["key", "--revision", "a".repeat(40)], { env, cwd: repo });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`${cfg}: save.max-chain`);
    }
    expect(fs.readdirSync(path.join(state, "config"))).toHaveLength(1);
    // Mended: the mended text is validated and used at once.
    fs.writeFileSync(cfg, VALID.replace("prefix: bench\n", "prefix: mended\n"));
    const mended = await runCli(["key", "--revision", "a".repeat(40)], { env, cwd: repo });
    expect(mended.code, mended.stderr).toBe(0);
    expect(mended.stdout + mended.stderr).toContain("mended-");
  });
});
