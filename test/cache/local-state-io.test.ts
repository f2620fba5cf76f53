import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { sandbox } from "../helpers/sandbox.js";

/**
 * Preloaded into the CLI (NODE_OPTIONS=--import): counts the opens of the workload's local state
 * file (not the probe caches beside it) for reading (readState opens it O_NONBLOCK|O_NOFOLLOW) and
 * the writes of it, and writes the counts at exit.
 */
const COUNTER = `
import fs from "node:fs";
const counts = { reads: 0, writes: 0 };
const isState = (p) => typeof p === "string" && /\\/state\\/prof-[0-9a-f]{16}\\.json/.test(p);
// Every read opens the file for reading (readFileSync too), whatever the flags say beside O_RDONLY.
const openSync = fs.openSync;
const reading = (flags) =>
  flags === undefined || flags === "r" || (typeof flags === "number" && (flags & 3) === fs.constants.O_RDONLY);
fs.openSync = function (p, flags, ...rest) {
  if (isState(p) && reading(flags)) counts.reads++;
  return openSync.call(this, p, flags, ...rest);
};
const writeFileSync = fs.writeFileSync;
fs.writeFileSync = function (p, ...rest) {
  if (isState(p)) counts.writes++;
  return writeFileSync.call(this, p, ...rest);
};
process.on("exit", () => fs.writeFileSync(process.env.COUNTS_TO, JSON.stringify(counts)));
`;

describe("local state: one read and at most one write per command", () => {
  it("restore, save and a second restore and save each read the state file once and write it once", async () => {
    const sb = sandbox();
    const cache = path.join(sb.dir, "triton");
    generateTritonCache(cache, { entries: 6, totalBytes: 60_000 });
    fs.writeFileSync(
      path.join(sb.dir, "kcache.yml"),
      `caches:\n  - name: triton\n    kind: triton\n    path: ${cache}\nstore:\n  path: ${sb.store}\nkey:\n  prefix: prof\n`,
    );
    const counter = path.join(sb.dir, "counter.mjs");
    fs.writeFileSync(counter, COUNTER);
    const counts: Record<string, { reads: number; writes: number }> = {};
    const run = async (label: string, args: string[]) => {
      const to = path.join(sb.dir, `${label}.json`);
      const r = await runCli([...args, "--revision", "a".repeat(40)], {
        cwd: sb.dir,
        env: { ...sb.env, NODE_OPTIONS: `--import=${counter}`, COUNTS_TO: to },
      });
      expect(r.code, r.stderr).toBe(0);
      counts[label] = JSON.parse(fs.readFileSync(to, "utf8"));
    };
    await run("first save", ["save"]);
    await run("restore", ["restore"]);
    await run("save after it", ["save"]);
    // The state file exists by now: the restore reads it, writes the new one, and reads it no more.
    await run("restore again", ["restore"]);
    expect(counts).toEqual({
      // No state yet: the read finds nothing.
      "first save": { reads: 1, writes: 1 },
      restore: { reads: 1, writes: 1 },
      // The key is there already: nothing is written, and the end of the job reads nothing more.
      "save after it": { reads: 1, writes: 0 },
      "restore again": { reads: 1, writes: 1 },
    });
  });
});
