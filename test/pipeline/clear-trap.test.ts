import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { silentLog } from "../../src/log.js";
import { ClearTrap } from "../../src/pipeline/stages/clear-trap.js";
import { tempDir } from "../helpers/sandbox.js";

/** The tripwire in `$TRITON_CACHE_DIR/cache` that catches a command clearing a folder Triton never uses. */
describe("the clear trap", () => {
  const trap = (root: string) => {
    const log = silentLog();
    return {
      log,
      trap: new ClearTrap(
        [{ name: "triton", kind: "triton", path: root, env: "TRITON_CACHE_DIR" }],
        log,
        "any",
      ),
    };
  };

  it("warns once when a command removes the folder, and leaves nothing behind", () => {
    const root = tempDir("trap");
    const a = trap(root);
    a.trap.arm();
    fs.rmSync(path.join(root, "cache"), { recursive: true });
    a.trap.disarm("bench");
    expect(a.log.warnings.join("\n")).toMatch(/bench removed .*cache, a folder Triton never uses/);
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it("two jobs at once on one folder: neither job's disarming reads as the other's command clearing it", () => {
    const root = tempDir("trap");
    const a = trap(root);
    const b = trap(root);
    a.trap.arm();
    b.trap.arm();
    a.trap.disarm("a");
    b.trap.disarm("b");
    expect([...a.log.warnings, ...b.log.warnings]).toEqual([]);
    expect(fs.readdirSync(root)).toEqual([]);
  });
});
