import { defineConfig } from "vitest/config";

/**
 * The fault-injection suite (`npm run test:faults`): kill -9, racing processes, hostile packs, faulty
 * S3 endpoints, a full filesystem, pull-request events and broken configs, each scenario asserting
 * what a user must never see and recording a row of the table in RELIABILITY.md.
 */
export default defineConfig({
  test: {
    include: ["test/faults/**/*.fault.ts"],
    globalSetup: ["test/faults/global-setup.ts"],
    // After the summary, a line per failed test: a CI log cut to its tail still names it.
    reporters: ["default", "./test/helpers/failure-tail-reporter.ts"],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
  },
});
