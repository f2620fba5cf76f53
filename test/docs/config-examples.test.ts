import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseConfig, profileConfig } from "../../src/config/load.js";
import { resolveParsed } from "../../src/config/resolve.js";
import { jobConfig } from "../../src/job/build-job.js";
import { silentLog } from "../../src/log.js";
import { actionYml, ROOT } from "../helpers/action-runner.js";
import { tempDir } from "../helpers/sandbox.js";

/**
 * Every YAML block in README.md and docs/, as a reader copies it: a kcache.yml (or a part of one,
 * completed with a cache where it names none) loads and each of its profiles resolves; a workflow's
 * kcache step gives only inputs action.yml declares, and its inputs make a job kcache accepts.
 */
const PAGES = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith(".md"),
);
const blocks = PAGES.flatMap((page) => {
  const text = fs.readFileSync(path.join(ROOT, page), "utf8");
  return [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m, i) => ({
    where: `${page} yaml block ${i + 1}`,
    text: m[1] as string,
  }));
});
const CONFIG_KEYS = ["caches", "store", "key", "profiles", "save", "stack", "github"];
const ENV = {
  HOME: "/home/runner",
  TRITON_CACHE_DIR: "/home/runner/.triton/cache",
  CI_PROJECT_DIR: "/builds/kernels",
  WORKSPACE: "/var/jenkins/ws",
  BUILDKITE_BUILD_CHECKOUT_PATH: "/buildkite/builds/kernels",
};

describe("the YAML the README and docs show, as written", () => {
  it("finds the blocks", () => expect(blocks.length).toBeGreaterThanOrEqual(10));

  it.each(blocks)("$where", async ({ where, text }) => {
    const doc = parse(text) as unknown;
    const steps = kcacheSteps(doc);
    if (steps.length > 0) {
      const declared = Object.keys(actionYml("").inputs);
      for (const s of steps) {
        for (const input of Object.keys(s)) expect(declared, `${where}: input ${input}`).toContain(input);
        if (s.path) {
          // The inputs as the action turns them into a job (kcache.yml-less, as actions/cache is).
          await jobConfig({
            config: resolveParsed(parseConfig(null, "(defaults)"), "(defaults)", ENV, tempDir("cwd")),
            overrides: {
              paths: String(s.path).split("\n"),
              kind: s.kind ? (String(s.kind) as "triton") : "auto",
              isolate: s.isolate === true || s.isolate === "true" ? true : undefined,
            },
            log: silentLog(),
            env: ENV,
            cwd: tempDir("cwd"),
          });
        }
      }
      return;
    }
    if (!doc || typeof doc !== "object" || Array.isArray(doc)) return;
    const keys = Object.keys(doc);
    if (!keys.every((k) => CONFIG_KEYS.includes(k))) return; // a workflow or another file's YAML
    const full =
      "caches" in doc ? text : `${text}\ncaches:\n  - { name: triton, kind: triton, path: /tmp/t }\n`;
    const config = resolveParsed(parseConfig(full, where), where, ENV, tempDir("cwd"));
    for (const name of Object.keys(config.profiles)) profileConfig(config, name, ENV);
  });
});

/** The `with:` of every kcache step in a workflow or a list of steps. */
function kcacheSteps(doc: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const visit = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === "object") {
      const o = v as Record<string, unknown>;
      if (typeof o.uses === "string" && /^kcache\/kcache(\/restore|\/save)?@/.test(o.uses))
        out.push((o.with as Record<string, unknown>) ?? {});
      else Object.values(o).forEach(visit);
    }
  };
  visit(doc);
  return out;
}
