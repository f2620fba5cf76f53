import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { corruptEntries, entryNames } from "../helpers/entry-compare.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { tempDir } from "../helpers/sandbox.js";
import { filesOutside, randomInt, Tally } from "./harness.js";

const TRIALS = Number(process.env.KCACHE_FAULT_TRIALS ?? 50);

/** A project whose store, cache folder and state folder come from the environment. */
function killProject() {
  const dir = tempDir("kcache-kill");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    "caches:\n  - name: triton\n    kind: triton\n    path: ${CACHE_ROOT}\nstore:\n  path: ${STORE}\nkey:\n  prefix: kill\n",
  );
  const source = path.join(dir, "source");
  generateTritonCache(source, { entries: 60, totalBytes: 8_000_000, seed: 11 });
  const env = (over: Record<string, string>): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    PYTHONPATH: installedStack(),
    HOME: dir,
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "c".repeat(40),
    CACHE_ROOT: source,
    STORE: path.join(dir, "store"),
    KCACHE_STATE_DIR: path.join(dir, "state"),
    ...over,
  });
  return { dir, source, env };
}

/** Runs kcache and kills it with SIGKILL after `afterMs`. */
function killedAfter(args: string[], env: NodeJS.ProcessEnv, cwd: string, afterMs: number) {
  let timer: NodeJS.Timeout | undefined;
  return runMeasured(args, {
    env,
    cwd,
    onStart: (pid) => {
      timer = setTimeout(() => {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already done
        }
      }, afterMs);
    },
  }).finally(() => clearTimeout(timer));
}

describe("kill -9 at random points", () => {
  it(`during save (${TRIALS} trials): every key a restore can see restores whole`, async () => {
    const p = killProject();
    const tally = new Tally("kill -9 during save");
    const full = await runMeasured(["save"], {
      env: p.env({ STORE: path.join(p.dir, "store-full"), KCACHE_STATE_DIR: path.join(p.dir, "st-full") }),
      cwd: p.dir,
    });
    expect(full.code).toBe(0);
    tally.run(full);
    const spanMs = Math.ceil(full.seconds * 1000 * 1.2);
    for (let i = 0; i < TRIALS; i++) {
      const store = path.join(p.dir, `store-${i}`);
      const state = path.join(p.dir, `state-${i}`);
      const killed = await killedAfter(
        ["save"],
        p.env({ STORE: store, KCACHE_STATE_DIR: state }),
        p.dir,
        randomInt(0, spanMs),
      );
      tally.run(killed);
      tally.row.trials++;
      const into = path.join(p.dir, `restored-${i}`);
      const back = await runMeasured(["restore", "--strict", "--json"], {
        env: p.env({ STORE: store, CACHE_ROOT: into, KCACHE_STATE_DIR: path.join(p.dir, `rs-${i}`) }),
        cwd: p.dir,
      });
      tally.run(back);
      const report =
        back.code === 0
          ? (JSON.parse(back.stdout) as { matchedKey: string | null; entriesRestored: number })
          : null;
      const whole = report !== null && (report.matchedKey === null || report.entriesRestored === 60);
      if (!whole || corruptEntries(p.source, into).length) tally.row.corruptRestores++;
      fs.rmSync(into, { recursive: true, force: true });
    }
    tally.row.writesOutside = filesOutside(p.dir, ["kcache.yml", "source"]).filter(
      (f) => !/^(store|state|st|rs)-?[^/]*\//.test(f),
    ).length;
    const row = tally.save();
    expect(row.corruptRestores).toBe(0);
    expect(row.writesOutside).toBe(0);
  });

  it(`during restore (${TRIALS} trials) into a folder kept between jobs: no damaged entry is ever visible`, async () => {
    const p = killProject();
    const tally = new Tally("kill -9 during restore");
    expect((await runMeasured(["save"], { env: p.env({}), cwd: p.dir })).code).toBe(0);
    const folder = path.join(p.dir, "runner-cache");
    const env = p.env({ CACHE_ROOT: folder, KCACHE_STATE_DIR: path.join(p.dir, "runner-state") });
    const full = await runMeasured(["restore"], { env, cwd: p.dir });
    tally.run(full);
    const spanMs = Math.ceil(full.seconds * 1000 * 1.2);
    const names = entryNames(p.source);
    for (let i = 0; i < TRIALS; i++) {
      // The runner lost some entries since (or never had them): the restore has work to do.
      for (const n of names)
        if (Math.random() < 0.5) fs.rmSync(path.join(folder, n), { recursive: true, force: true });
      const killed = await killedAfter(["restore"], env, p.dir, randomInt(0, spanMs));
      tally.run(killed);
      tally.row.trials++;
      if (corruptEntries(p.source, folder).length) tally.row.corruptRestores++;
    }
    const last = await runMeasured(["restore", "--strict"], { env, cwd: p.dir });
    tally.run(last);
    if (
      last.code !== 0 ||
      corruptEntries(p.source, folder).length ||
      entryNames(folder).join() !== names.join()
    )
      tally.row.corruptRestores++;
    tally.row.writesOutside = filesOutside(p.dir, [
      "kcache.yml",
      "source",
      "store",
      "state",
      "runner-cache",
      "runner-state",
    ]).length;
    const row = tally.save();
    expect(row.corruptRestores).toBe(0);
    expect(row.writesOutside).toBe(0);
  });
});
