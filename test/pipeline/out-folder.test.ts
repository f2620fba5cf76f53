import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import { silentLog } from "../../src/log.js";
import { pidNamespace } from "../../src/pack/read/staging-owner.js";
import { holdOutFolder } from "../../src/pipeline/out-folder.js";
import { tempDir } from "../helpers/sandbox.js";

describe("a run's out folder has one run at a time", () => {
  it("a run given no --out takes the folder beside a held one; a named one is refused; a released one is free", () => {
    const cwd = tempDir("kcache-out");
    const first = holdOutFolder(".kcache/bench", { given: false, cwd, log: silentLog() });
    expect(first.dir).toBe(path.join(cwd, ".kcache", "bench"));
    const second = holdOutFolder(".kcache/bench", { given: false, cwd, log: silentLog() });
    expect(second.dir).toBe(path.join(cwd, ".kcache", "bench@2"));
    expect(() => holdOutFolder(".kcache/bench", { given: true, cwd, log: silentLog() })).toThrow(UsageError);
    first.release();
    const third = holdOutFolder(".kcache/bench", { given: true, cwd, log: silentLog() });
    expect(third.dir).toBe(first.dir);
    second.release();
    third.release();
  });

  it("a folder whose run was killed is taken again", () => {
    const cwd = tempDir("kcache-out");
    const dir = path.join(cwd, "out");
    fs.mkdirSync(dir);
    // A process of this namespace that has exited: its lock holds nothing.
    const gone = Number(execFileSync("sh", ["-c", "echo $$"]).toString().trim());
    fs.writeFileSync(path.join(dir, ".kcache-run"), `holder-${pidNamespace()}-${gone}-0123456789ab`);
    const out = holdOutFolder("out", { given: true, cwd, log: silentLog() });
    expect(out.dir).toBe(dir);
    out.release();
    expect(fs.existsSync(path.join(dir, ".kcache-run"))).toBe(false);
  });
});
