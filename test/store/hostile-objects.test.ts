import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { liveObjectsIn, liveProject, runBounded } from "../helpers/live-project.js";
import { runSimWorkload, SIM } from "../helpers/python-sim.js";
import { tempDir } from "../helpers/sandbox.js";

/**
 * What may lie in a local store where an object should (store/local.ts): none is a file kcache
 * wrote, and reading any of them as one would block for good (a FIFO: Node joins the thread at
 * exit, so kcache never ends) or never end (/dev/zero).
 */
const PLANTED: Record<string, (file: string) => void> = {
  "a FIFO": (f) => execFileSync("mkfifo", [f]),
  "a link to /dev/zero": (f) => fs.symlinkSync("/dev/zero", f),
  "a character device (/dev/zero's numbers)": (f) => execFileSync("mknod", [f, "c", "1", "5"]),
  "a folder": (f) => fs.mkdirSync(f),
};

/** mknod needs root (or CAP_MKNOD): where it is refused, the device row cannot be planted. */
const canMknod = (() => {
  const f = path.join(tempDir("mknod"), "dev");
  return spawnSync("mknod", [f, "c", "1", "5"]).status === 0;
})();

function plant(what: string, file: string): void {
  fs.rmSync(file, { recursive: true, force: true });
  (PLANTED[what] as (f: string) => void)(file);
}

/** Every file under `dir` whose store name starts with `prefix`, with a copy to put back. */
function objectFiles(store: string, prefix: string): { file: string; name: string; copy: Buffer }[] {
  return fs
    .readdirSync(path.join(store, prefix), { recursive: true, withFileTypes: true })
    .filter((f) => f.isFile())
    .map((f) => {
      const file = path.join(f.parentPath, f.name);
      return { file, name: path.relative(store, file), copy: fs.readFileSync(file) };
    });
}

const workload = (args: string) => `python3 ${SIM}/workload.py ${args}`;

describe("something other than a file where a local store's object should be (store/local.ts)", () => {
  it.skipIf(canMknod)(
    "a character device where an object should be: not planted here (mknod needs root)",
    () => {},
  );

  it.each(Object.keys(PLANTED).filter((k) => canMknod || !k.startsWith("a character device")))(
    "%s at a manifest's, a pack's and a live record's place: restore, save and run end, warn naming the object, and the job goes on",
    async (what) => {
      const p = liveProject({
        profiles: {
          job: { commands: [workload("3 0")] },
          // The same kernels under a prefix no key holds: every lookup reads their live records.
          other: { commands: [workload("3 0")], prefix: "other-bench" },
        },
      });
      const first = await p.run("job", "r1", "a");
      expect(first.report.save.outcome).toBe("saved");
      const cli = (args: string[], runner: string, sha = "a") =>
        runBounded(args, { env: p.env(runner, sha), cwd: p.dir });
      const compile = (runner: string) =>
        runSimWorkload(path.join(p.dir, runner, "triton"), { plain: 3, autotuned: 0 });

      // A manifest's place: the restore warns and restores nothing; the save of that key warns too.
      const manifests = objectFiles(p.store, "manifests");
      for (const m of manifests) plant(what, m.file);
      const restored = await cli(["restore"], "r2");
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.stderr).toContain(path.basename(manifests[0]?.name as string));
      compile("r2");
      const saved = await cli(["save"], "r2");
      expect(saved.code, saved.stderr).toBe(0);
      expect(saved.stderr).toContain(path.basename(manifests[0]?.name as string));
      for (const m of manifests) {
        fs.rmSync(m.file, { recursive: true, force: true });
        fs.writeFileSync(m.file, m.copy);
      }

      // A pack's place: the restore warns naming the pack and places nothing from it.
      const packs = objectFiles(p.store, "packs");
      for (const k of packs) plant(what, k.file);
      const fromPacks = await cli(["restore", "--json"], "r3");
      expect(fromPacks.code, fromPacks.stderr).toBe(0);
      expect(fromPacks.stderr).toContain(path.basename(packs[0]?.name as string));
      expect(JSON.parse(fromPacks.stdout).entriesRestored).toBe(0);
      compile("r3");
      const savedAfter = await cli(["save"], "r3", "c");
      expect(savedAfter.code, savedAfter.stderr).toBe(0);

      // A live record's place: each lookup is refused alone, the job compiles, passes and saves.
      const live = [...liveObjectsIn(p.store).values()];
      expect(live.length).toBeGreaterThan(0);
      for (const o of live) plant(what, o.record);
      const other = await p.run("other", "r4", "b");
      expect(other.report.lazy).toMatchObject({ storeDown: null, live: 0 });
      expect(other.report.lazy.failed).toBeGreaterThan(0);
      expect(other.report.kernels.compiled).toBe(3);
      expect(other.report.save.outcome).toBe("saved");
      expect(other.stderr).toContain(path.basename(live[0]?.record as string));
    },
  );
});
