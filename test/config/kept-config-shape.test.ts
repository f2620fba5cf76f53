import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { validatedConfig } from "../../src/config/validated-config.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const VALID = `caches:
  - name: triton
    kind: triton
    path: /tmp/never-made/triton
key:
  prefix: bench
profiles:
  bench:
    commands:
      - name: bench
        run: python bench.py --json out/result.json
    checks:
      - type: finite-positive
        file: out/result.json
        fields: [seconds]
`;

const CONFIG_KEYS = ["caches", "store", "key", "profiles", "save", "stack", "github"];

/** Writes `value` as the kept answer in `file`, with the digest keepAnswer would give it. */
function forge(file: string, value: unknown): void {
  const sha256 = createHash("sha256").update(JSON.stringify(value)).digest("hex");
  fs.writeFileSync(file, JSON.stringify({ sha256, value }));
}

const WRONG = (genuine: { profiles: { bench: object } }) => [
  { caches: [1] },
  { profiles: { x: 5 } },
  { store: "zzz" },
  { caches: [] },
  { profiles: { bench: { ...genuine.profiles.bench, commands: [{ name: 1, run: null }] } } },
  { key: { prefix: 7 } },
  { save: null },
];

describe("a kept kcache.yml answer is used only when it has the shape the commands read (config/validated-config.ts)", () => {
  it("a forged answer whose digest matches but whose shape is wrong is validated again, and the good answer kept in its place", async () => {
    const state = tempDir("state");
    const env = { KCACHE_STATE_DIR: state };
    const file = path.join(tempDir("repo"), "kcache.yml");
    const genuine = await validatedConfig(file, VALID, env);
    const [name] = fs.readdirSync(path.join(state, "config"));
    const kept = path.join(state, "config", name as string);
    for (const w of WRONG(genuine as never)) {
      forge(kept, { ...genuine, ...w });
      expect(await validatedConfig(file, VALID, env), JSON.stringify(w)).toEqual(genuine);
      expect(JSON.parse(fs.readFileSync(kept, "utf8")).value, JSON.stringify(w)).toEqual(genuine);
    }
  });

  it("a command (kcache key) still works with such an answer kept", async () => {
    const repo = tempDir("repo");
    const state = tempDir("state");
    const env = { PATH: process.env.PATH, HOME: repo, KCACHE_STATE_DIR: state };
    fs.writeFileSync(path.join(repo, "kcache.yml"), VALID);
    const key = () => runCli(["key", "--revision", "a".repeat(40)], { env, cwd: repo });
    const first = await key();
    expect(first.code, first.stderr).toBe(0);
    const [name] = fs.readdirSync(path.join(state, "config"));
    const kept = path.join(state, "config", name as string);
    const genuine = JSON.parse(fs.readFileSync(kept, "utf8")).value;
    for (const w of WRONG(genuine)) {
      forge(kept, { ...genuine, ...w });
      const again = await key();
      expect(again.code, `${JSON.stringify(w)}: ${again.stderr}`).toBe(0);
      expect(again.stdout).toBe(first.stdout);
    }
  });

  it("the answer for every kcache.yml the README and docs show is kept (the shape check takes what the schema gives)", async () => {
    const root = path.resolve(import.meta.dirname, "../..");
    const pages = ["README.md", ...fs.readdirSync(path.join(root, "docs")).map((f) => `docs/${f}`)];
    let checked = 0;
    for (const page of pages.filter((f) => f.endsWith(".md"))) {
      const text = fs.readFileSync(path.join(root, page), "utf8");
      for (const m of text.matchAll(/```yaml\n([\s\S]*?)```/g)) {
        const block = m[1] as string;
        const doc = parse(block) as unknown;
        if (!doc || typeof doc !== "object" || Array.isArray(doc)) continue;
        if (!Object.keys(doc).every((k) => CONFIG_KEYS.includes(k))) continue; // a workflow's YAML
        // A part of a kcache.yml, completed with a cache as a reader would.
        const full =
          "caches" in doc ? block : `${block}\ncaches:\n  - { name: triton, kind: triton, path: /tmp/t }\n`;
        const state = tempDir("state");
        await validatedConfig(path.join(tempDir("repo"), "kcache.yml"), full, {
          KCACHE_STATE_DIR: state,
          HOME: "/home/runner",
          TRITON_CACHE_DIR: "/home/runner/.triton/cache",
        });
        expect(fs.readdirSync(path.join(state, "config")), `${page}: ${block}`).toHaveLength(1);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(5);
  });
});
