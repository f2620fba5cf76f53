import type { Reporter, TestModule } from "vitest/node";

/**
 * Names each failed test, with the first line of its error, after vitest's own summary: a CI log
 * cut to its last lines still says what failed (the default reporter prints the details above the
 * summary, where a short tail loses them).
 */
export default class FailureTailReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const lines: string[] = [];
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        const r = t.result();
        if (r.state !== "failed") continue;
        const first = (r.errors?.[0]?.message ?? "").split("\n", 1)[0]?.slice(0, 300) ?? "";
        lines.push(`FAILED ${m.moduleId.replace(`${process.cwd()}/`, "")} > ${t.fullName}: ${first}`);
      }
      if (m.state() === "failed" && !m.children.size)
        lines.push(`FAILED ${m.moduleId}: ${m.errors()[0]?.message?.split("\n")[0] ?? "module failed"}`);
    }
    if (lines.length) process.stdout.write(`\n${lines.join("\n")}\n`);
  }
}
