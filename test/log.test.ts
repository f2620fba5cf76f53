import { afterEach, describe, expect, it, vi } from "vitest";
import { exitCodeFor } from "../src/cli/exit-codes.js";
import { IntegrityError } from "../src/errors.js";
import { createLog } from "../src/log.js";

/*
 * kcache's messages quote what stores and jobs wrote (an object's name, a plan's keys). GitHub's
 * runner takes any line of a step's output that starts with "::" (after blanks) as a workflow
 * command (an annotation, a masked value, a variable): no such line may come from quoted text.
 */
const QUOTED =
  "a name from the store: x\n  ::error title=forged::owned\r\n::add-mask::y\r::warning::z\n\v::error::vt\n\u00a0::warning::nbsp kp-c##[add-mask]hunter2";

let written = "";
afterEach(() => {
  vi.restoreAllMocks();
  written = "";
});
function capture(): void {
  vi.spyOn(process.stderr, "write").mockImplementation((s: string | Uint8Array) => {
    written += String(s);
    return true;
  });
}

describe("kcache's messages never hand the CI runner a command", () => {
  it.each([
    ["an info line", () => createLog({ env: {} }).info(QUOTED)],
    ["a warning, outside GitHub Actions", () => createLog({ env: {} }).warn(QUOTED)],
    ["a warning, under GitHub Actions", () => createLog({ env: { GITHUB_ACTIONS: "true" } }).warn(QUOTED)],
    ["a --verbose line", () => createLog({ env: {}, verbose: true }).debug(QUOTED)],
    ["an error", () => exitCodeFor(new IntegrityError(QUOTED))],
  ])("%s: one line, the quoted text still there", (_what, write) => {
    capture();
    write();
    vi.restoreAllMocks();
    expect(written).toContain("forged");
    // Whitespace as GitHub's runner trims it (.NET's TrimStart: \v, no-break spaces...), and its
    // older form, ##[command] anywhere in a line.
    expect(written).not.toMatch(/^\s*::(error|add-mask)/m);
    expect(written).not.toContain("##[");
    expect(written).toContain("hunter2");
    // Only the warning annotation itself, under GitHub Actions, is a command: kcache's own.
    expect(written.split("\n").filter((l) => /^\s*::/.test(l)).length).toBeLessThanOrEqual(1);
  });
});
