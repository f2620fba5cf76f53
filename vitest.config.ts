import fs from "node:fs";
import { defineConfig } from "vitest/config";

/**
 * @actions/workflow-parser (inlined below) ships source maps naming sources it does not ship, and
 * Vite warned once per file, 67 lines per run, about a package we do not debug: its files are
 * loaded here without their source map comment.
 */
const workflowParserWithoutMaps = {
  name: "workflow-parser-without-source-maps",
  enforce: "pre" as const,
  load(id: string) {
    if (!id.includes("/node_modules/@actions/workflow-parser/") || !id.endsWith(".js")) return null;
    return { code: fs.readFileSync(id, "utf8").replace(/^\/\/# sourceMappingURL=.*$/gm, ""), map: null };
  },
};

export default defineConfig({
  plugins: [workflowParserWithoutMaps],
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    // After the summary, a line per failed test: a CI log cut to its tail still names it.
    reporters: ["default", "./test/helpers/failure-tail-reporter.ts"],
    // Time limits end a test that hangs; they are not a speed bound (a loaded machine is slow, not
    // wrong): what a user would notice of time is in the fault suite's bounds, taken from kcache's own
    // timeouts, and in bench/. Ten minutes, for every test alike.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    // Tests spawn real processes (python3, zstd, the CLI); two cores on CI.
    maxWorkers: 2,
    // The store suite measures live buffer memory during 100 MB transfers, after a forced GC.
    execArgv: ["--expose-gc"],
    // GitHub's workflow parser imports JSON without import attributes, which Node's ESM loader
    // refuses; letting Vite bundle it for the tests handles those imports.
    server: { deps: { inline: ["@actions/workflow-parser"] } },
  },
});
