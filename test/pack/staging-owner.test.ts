import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  makeStaging,
  pidNamespace,
  STALE_FOREIGN_MS,
  stagingIsStale,
} from "../../src/pack/read/staging-owner.js";
import { tempDir } from "../helpers/sandbox.js";

describe("staging folders' owners", () => {
  it("deletes a staging folder of this PID namespace whose process is gone, and another namespace's only once untouched for a while", () => {
    const root = tempDir("staging");
    const mine = path.basename(makeStaging(root));
    expect(mine).toMatch(new RegExp(`^\\.kcache-restore-${pidNamespace()}-${process.pid}-[0-9a-f]{12}$`));
    // A dead process of this namespace (PID 2^22 + 1 is beyond Linux's pid_max).
    const dead = `.kcache-restore-${pidNamespace()}-4194305-abcdefabcdef`;
    // A live restore in another container: its PID means nothing here.
    const foreign = ".kcache-restore-0123456789ab-1-abcdefabcdef";
    // A kcache from before owners were named: judged by age alone.
    const legacy = ".kcache-restore-1-xyz";
    for (const n of [dead, foreign, legacy]) fs.mkdirSync(path.join(root, n));
    expect(stagingIsStale(root, dead)).toBe(true);
    expect(stagingIsStale(root, foreign)).toBe(false);
    expect(stagingIsStale(root, legacy)).toBe(false);
    const later = Date.now() + STALE_FOREIGN_MS + 1000;
    expect(stagingIsStale(root, foreign, later)).toBe(true);
    expect(stagingIsStale(root, legacy, later)).toBe(true);
    expect(stagingIsStale(root, "kernel-entry")).toBe(false);
  });
});
