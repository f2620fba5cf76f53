import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FAULT_CODES } from "../../src/cache/faults.js";
import { ENVIRONMENT_VARIABLES } from "../../src/environment.js";
import { srcFiles } from "./source-files.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
/** Folders at or above job/: they build the job, and may take the process's environment (through hostEnvironment). */
const READS_THE_ENVIRONMENT = new Set(["job", "pipeline", "history", "report", "github", "cli"]);
const CLI_DOC = fs.readFileSync(path.join(ROOT, "docs/cli.md"), "utf8");

describe("one place names the environment (src/environment.ts)", () => {
  it("nothing below job/ touches process.env but src/environment.ts", () => {
    const wrong = srcFiles()
      .filter(
        ({ file }) => file !== "environment.ts" && !READS_THE_ENVIRONMENT.has(file.split("/")[0] as string),
      )
      .filter(({ text }) => /process\.env\b/.test(text))
      .map(({ file }) => file);
    expect(wrong).toEqual([]);
  });

  it("every variable src/ reads is named in ENVIRONMENT_VARIABLES, and each named one is read", () => {
    const named = new Set(Object.keys(ENVIRONMENT_VARIABLES));
    const read = new Set<string>();
    for (const { text } of srcFiles())
      for (const m of text.matchAll(
        /\b[eE]nv\??\.([A-Z][A-Z0-9_]+)\b(?!\s*(?:\?\?)?=[^=])|\b[eE]nv\[\s*"([A-Z][A-Z0-9_]+)"\s*\]/g,
      ))
        read.add((m[1] ?? m[2]) as string);
    expect([...read].filter((v) => !named.has(v))).toEqual([]);
    // Named in the table once; read (or passed on by name) at least once more somewhere in src/.
    const all = srcFiles()
      .map(({ text }) => text)
      .join("\n");
    const unused = [...named].filter((v) => all.split(new RegExp(`\\b${v}\\b`)).length < 3);
    expect(unused).toEqual([]);
  });

  it("docs/cli.md lists every variable and every fault code, with nothing extra", () => {
    const rows = (pattern: RegExp) => [...CLI_DOC.matchAll(pattern)].map((m) => m[1]);
    expect(rows(/^\| `([A-Z][A-Z0-9_]+)` \|/gm).sort()).toEqual(Object.keys(ENVIRONMENT_VARIABLES).sort());
    expect(rows(/^\| `([a-z][a-z-]+)` \| [134] \|/gm).sort()).toEqual(Object.keys(FAULT_CODES).sort());
  });
});
