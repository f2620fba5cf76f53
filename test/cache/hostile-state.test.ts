import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBounded } from "../helpers/live-project.js";
import { project } from "../helpers/project.js";
import { runSimWorkload } from "../helpers/python-sim.js";

/**
 * What may lie where the local state should (cache/local-state.ts readState), given the key the
 * commands work on: each is ignored with a warning, and the restore and save go on.
 */
const PLANTED: Record<string, (file: string, primaryKey: string) => void> = {
  "a FIFO": (f) => execFileSync("mkfifo", [f]),
  "a link to /dev/zero": (f) => fs.symlinkSync("/dev/zero", f),
  "a state whose index is null": (f, primaryKey) =>
    fs.writeFileSync(f, JSON.stringify({ version: 1, primaryKey, parent: null, index: null })),
  "a state whose parent's manifest is a number": (f, primaryKey) =>
    fs.writeFileSync(
      f,
      JSON.stringify({
        version: 1,
        primaryKey,
        parent: { key: primaryKey, scope: "branch/main", exact: true, manifest: 5 },
        index: {},
      }),
    ),
  "a state whose job's deferred entries are strings": (f, primaryKey) =>
    fs.writeFileSync(
      f,
      JSON.stringify({
        version: 1,
        primaryKey,
        parent: null,
        index: {},
        job: {
          startedAt: 1,
          markers: {},
          folders: {},
          seen: {},
          local: {},
          atime: {},
          deferred: { triton: "x" },
        },
      }),
    ),
};

describe("the local state is read as kcache's own file (cache/local-state.ts readState)", () => {
  it.each(Object.keys(PLANTED))(
    "%s where the state lies: restore and save end, warn naming it, and save",
    async (what) => {
      const p = project();
      runSimWorkload(p.cache, { plain: 2, autotuned: 0 });
      const rev = (c: string) => ["--revision", c.repeat(40)];
      const saved = await runBounded(["save", ...rev("a")], { env: p.env, cwd: p.dir });
      expect(saved.code, saved.stderr).toBe(0);
      const state = p.env.KCACHE_STATE_DIR as string;
      const [file] = fs.readdirSync(state).filter((f) => f.endsWith(".json"));
      const at = path.join(state, file as string);
      // The key the restore and save below work on (revision b): a state for it is read, not passed over.
      const key = (JSON.parse(fs.readFileSync(at, "utf8")).primaryKey as string).replace(
        /a{40}$/,
        "b".repeat(40),
      );
      const planted = () => {
        fs.rmSync(at, { force: true });
        (PLANTED[what] as (f: string, k: string) => void)(at, key);
      };
      planted();
      const restored = await runBounded(["restore", ...rev("b")], { env: p.env, cwd: p.dir });
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.stderr).toContain(`local state ${at} ignored`);
      // The restore wrote a good state over it; planted again for the save.
      planted();
      runSimWorkload(p.cache, { plain: 3, autotuned: 0 });
      const again = await runBounded(["save", ...rev("b")], { env: p.env, cwd: p.dir });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toContain(`local state ${at} ignored`);
      expect(again.stderr).toMatch(/uploaded .* in \d+ pack/);
    },
  );
});
