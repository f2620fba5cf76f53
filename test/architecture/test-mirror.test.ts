import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SRC, srcFolders } from "./source-files.js";

const TEST = path.resolve(SRC, "../test");
/** test/ folders that are not a src/ folder's tests, and what they hold. */
const BESIDES_SRC: Record<string, string> = {
  architecture: "the rules of src/ itself: imports, sizes, the environment, this mirror",
  docs: "documents held to the code and the raw results",
  examples: "the shipped examples",
  faults: "the fault suite (npm run test:faults): kills, races, stalls, skew, runners as downloaded",
  fixtures: "generated inputs",
  helpers: "shared test code: servers, sandboxes, the CLI",
  sim: "the simulation (npm run test:sim): many jobs against one store under faults, invariants checked after every step",
};

describe("test/ mirrors src/", () => {
  it("every folder of src/ has its tests in the folder of the same name", () => {
    const missing = srcFolders()
      .filter((f) => f !== ".")
      .filter((f) => {
        const dir = path.join(TEST, f);
        return (
          !fs.existsSync(dir) ||
          !fs.readdirSync(dir, { recursive: true }).some((n) => String(n).endsWith(".test.ts"))
        );
      });
    expect(missing).toEqual([]);
  });

  it("every folder of test/ is a folder of src/ or named here with what it holds", () => {
    const folders = new Set(srcFolders());
    const strays = fs
      .readdirSync(TEST, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !folders.has(e.name) && !(e.name in BESIDES_SRC))
      .map((e) => e.name);
    expect(strays).toEqual([]);
  });
});
