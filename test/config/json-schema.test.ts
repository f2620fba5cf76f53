import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CONFIG_SCHEMA_URL, configJsonSchemaText } from "../../src/config/json-schema.js";
import { parseConfig } from "../../src/config/load.js";
import { schemaProblems } from "../helpers/json-schema-check.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FILE = path.join(ROOT, "schema", "kcache.schema.json");
const schema = JSON.parse(fs.readFileSync(FILE, "utf8")) as unknown;
const CACHES = "caches:\n  - { name: triton, kind: triton, path: /tmp/t }\n";

/** Every kcache.yml the repository shows: the examples' files and the docs' kcache.yml blocks. */
function shownConfigs(): { where: string; text: string }[] {
  const files = fs
    .readdirSync(path.join(ROOT, "examples"))
    .map((d) => `examples/${d}/kcache.yml`)
    .filter((f) => fs.existsSync(path.join(ROOT, f)))
    .map((f) => ({ where: f, text: fs.readFileSync(path.join(ROOT, f), "utf8") }));
  const pages = ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).map((f) => `docs/${f}`)];
  const blocks = pages
    .filter((p) => p.endsWith(".md"))
    .flatMap((p) =>
      [...fs.readFileSync(path.join(ROOT, p), "utf8").matchAll(/```yaml\n([\s\S]*?)```/g)].map((m, i) => ({
        where: `${p} yaml block ${i + 1}`,
        text: m[1] as string,
      })),
    )
    .filter(({ text }) => {
      const doc = parse(text) as unknown;
      const keys = doc && typeof doc === "object" && !Array.isArray(doc) ? Object.keys(doc) : [];
      const top = ["version", "caches", "store", "key", "profiles", "save", "stack", "github"];
      return keys.length > 0 && keys.every((k) => top.includes(k));
    })
    // A part of a kcache.yml, as the docs show one, completed with a cache as config-examples does.
    .map((b) => (/^caches:/m.test(b.text) ? b : { ...b, text: `${b.text}\n${CACHES}` }));
  return [...files, ...blocks];
}

describe("schema/kcache.schema.json", () => {
  it("is what the loader's schema makes now (npm run schema writes it)", () => {
    expect(fs.readFileSync(FILE, "utf8"), "schema/kcache.schema.json is stale: run npm run schema").toBe(
      configJsonSchemaText(),
    );
  });

  const shown = shownConfigs();
  it("is checked against every kcache.yml the repository shows", () => {
    expect(shown.filter((s) => s.where.startsWith("examples/")).length).toBeGreaterThanOrEqual(3);
    expect(shown.filter((s) => s.where.startsWith("docs/")).length).toBeGreaterThanOrEqual(5);
  });

  it.each(shown)("takes $where, as the loader does", ({ where, text }) => {
    parseConfig(text, where);
    expect(schemaProblems(schema, parse(text))).toEqual([]);
  });

  it.each([
    ["a command without run", `${CACHES}profiles:\n  p:\n    commands: [{ name: a }]\n`],
    ["a setting kcache does not know", `${CACHES}key: { prefx: a }\n`],
    ["an S3 setting on a store without a type", `${CACHES}store: { bucket: ci-cache }\n`],
    [
      "a check type that does not exist",
      `${CACHES}profiles:\n  p:\n    commands: [{ name: a, run: x }]\n    checks: [{ type: finite, file: r.json }]\n`,
    ],
    ["a profile name with a space", `${CACHES}profiles:\n  "a b":\n    commands: [{ name: a, run: x }]\n`],
  ])("refuses %s, as the loader does", (_, text) => {
    expect(() => parseConfig(text, "k.yml")).toThrow();
    expect(schemaProblems(schema, parse(text))).not.toEqual([]);
  });

  it("is named where the README says how editors use it", () => {
    expect(fs.readFileSync(path.join(ROOT, "README.md"), "utf8")).toContain(
      `# yaml-language-server: $schema=${CONFIG_SCHEMA_URL}`,
    );
  });
});
