import { describe, expect, it } from "vitest";
import { runMarkdown } from "../../src/report/run-markdown.js";
import { runSandboxProfile } from "../helpers/profile.js";
import { sandbox } from "../helpers/sandbox.js";

describe("a run as Markdown (src/report/run-markdown.ts)", () => {
  it("heads a failed run with what failed first and lists every stage with its result", async () => {
    const sb = sandbox();
    const { report } = await runSandboxProfile(sb, {
      commands: [
        { name: "build", run: "true" },
        { name: "bench", run: "exit 3" },
        { name: "after", run: "true" },
      ],
    });
    const md = runMarkdown(report);
    expect(md).toMatch(/^### kcache run `p`: failed at command bench \(exit 3\)/);
    expect(md).toMatch(/\| ✅ build \| [\d.]+ \| exit 0/);
    expect(md).toMatch(/\| ❌ bench \| [\d.]+ \| exit 3/);
    expect(md).toMatch(/\| ⏭️ after \| 0\.00 \| not run: an earlier command failed/);
    expect(md).toContain("not saved: command bench (exit 3) failed");
  });

  it("heads a passing run as passed, with its save", async () => {
    const sb = sandbox();
    const { report } = await runSandboxProfile(sb, { commands: [{ name: "build", run: "true" }] });
    const md = runMarkdown(report);
    expect(md).toMatch(/^### kcache run `p`: passed/);
    expect(md).toMatch(/save: (saved|empty|nothing-new)/);
  });
});
