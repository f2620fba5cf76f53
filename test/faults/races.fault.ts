import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { startCli } from "../helpers/cli.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { tempDir } from "../helpers/sandbox.js";
import { filesOutside, randomInt, Tally } from "./harness.js";

const HOUR = 60 * 60 * 1000;

function raceProject(entries: number) {
  const dir = tempDir("kcache-race");
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    "caches:\n  - name: triton\n    kind: triton\n    path: ${CACHE_ROOT}\nstore:\n  path: ${STORE}\nkey:\n  prefix: race\n",
  );
  const source = path.join(dir, "source");
  generateTritonCache(source, { entries, totalBytes: entries * 40_000, seed: 21 });
  const env = (over: Record<string, string>): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    PYTHONPATH: installedStack(),
    HOME: dir,
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "a".repeat(40),
    CACHE_ROOT: source,
    STORE: path.join(dir, "store"),
    KCACHE_STATE_DIR: path.join(dir, "state"),
    ...over,
  });
  return { dir, source, env };
}

/** Every manifest file of a local store. */
function manifests(store: string): string[] {
  const root = path.join(store, "manifests");
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

describe("racing processes", () => {
  it("8 savers of one key at once (10 trials): exactly one manifest, which restores whole", async () => {
    const p = raceProject(30);
    const tally = new Tally("racing savers (8 at once)");
    for (let t = 0; t < 10; t++) {
      const store = path.join(p.dir, `store-${t}`);
      const runs = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          runMeasured(["save"], {
            env: p.env({ STORE: store, KCACHE_STATE_DIR: path.join(p.dir, `st-${t}-${i}`) }),
            cwd: p.dir,
          }),
        ),
      );
      for (const r of runs) tally.run(r);
      tally.row.trials++;
      const into = path.join(p.dir, `into-${t}`);
      const back = await runMeasured(["restore", "--strict", "--json"], {
        env: p.env({ STORE: store, CACHE_ROOT: into, KCACHE_STATE_DIR: path.join(p.dir, `rs-${t}`) }),
        cwd: p.dir,
      });
      tally.run(back);
      const restored =
        back.code === 0 ? (JSON.parse(back.stdout) as { entriesRestored: number }).entriesRestored : -1;
      if (manifests(store).length !== 1 || restored !== 30 || corruptEntries(p.source, into).length)
        tally.row.corruptRestores++;
    }
    const row = tally.save();
    expect(row.corruptRestores).toBe(0);
  });

  it("a delta save racing `prune --older-than 1h` (20 trials, random order): every key left restores whole", async () => {
    const p = raceProject(20);
    const tally = new Tally("savers racing prune");
    for (let t = 0; t < 20; t++) {
      const store = path.join(p.dir, `store-${t}`);
      const parent = await runMeasured(["save"], {
        env: p.env({ STORE: store, KCACHE_STATE_DIR: path.join(p.dir, `sp-${t}`) }),
        cwd: p.dir,
      });
      tally.run(parent);
      const old = new Date(Date.now() - 2 * HOUR);
      for (const e of fs.readdirSync(store, { recursive: true, withFileTypes: true }))
        if (e.isFile()) fs.utimesSync(path.join(e.parentPath, e.name), old, old);
      // The next revision's job restores the parent, compiles one kernel and saves a delta reusing its packs.
      const job = path.join(p.dir, `job-${t}`);
      const jobEnv = p.env({
        STORE: store,
        CACHE_ROOT: job,
        KCACHE_STATE_DIR: path.join(p.dir, `sj-${t}`),
        GITHUB_SHA: "b".repeat(40),
      });
      tally.run(await runMeasured(["restore"], { env: jobEnv, cwd: p.dir }));
      writeKernelEntry(job, tritonKeyName(`race-new-${t}`), `new_${t}`, 3000, rng(t));
      const offset = randomInt(0, 600);
      const later = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const [saved, pruned] = await Promise.all([
        later(Math.max(0, 300 - offset)).then(() => runMeasured(["save"], { env: jobEnv, cwd: p.dir })),
        later(Math.max(0, offset - 300)).then(() =>
          runMeasured(["prune", "--older-than", "1h"], { env: p.env({ STORE: store }), cwd: p.dir }),
        ),
      ]);
      tally.run(saved);
      tally.run(pruned);
      tally.row.trials++;
      for (const sha of ["a", "b"]) {
        const into = path.join(p.dir, `into-${t}-${sha}`);
        const back = await runMeasured(["restore", "--strict", "--json"], {
          env: p.env({
            STORE: store,
            CACHE_ROOT: into,
            KCACHE_STATE_DIR: path.join(p.dir, `r-${t}-${sha}`),
            GITHUB_SHA: sha.repeat(40),
          }),
          cwd: p.dir,
        });
        tally.run(back);
        if (back.code !== 0) tally.row.corruptRestores++;
        else {
          const r = JSON.parse(back.stdout) as {
            matchedKey: string | null;
            entriesRestored: number;
            cacheHit: boolean;
          };
          const want = sha === "b" ? 21 : 20;
          if (r.cacheHit && r.entriesRestored !== want) tally.row.corruptRestores++;
        }
      }
    }
    tally.row.writesOutside = filesOutside(p.dir, ["kcache.yml", "source"]).filter(
      (f) => !/^(store|sp|sj|job|into|r)-[^/]*\//.test(f),
    ).length;
    const row = tally.save();
    expect(row.corruptRestores).toBe(0);
    expect(row.writesOutside).toBe(0);
  });
});

/** Runs the built CLI, optionally as PID 1 of a PID namespace of its own (a container's view). */
async function kcacheIn(args: string[], env: NodeJS.ProcessEnv, cwd: string, ownPidNamespace: boolean) {
  const t0 = Date.now();
  const r = await startCli(args, { env, cwd, wrapper: ownPidNamespace ? ["unshare", "--pid", "--fork"] : [] })
    .promise;
  return { ...r, seconds: (Date.now() - t0) / 1000 };
}

describe("restores sharing one cache folder", () => {
  for (const [label, rounds, width, ownNs] of [
    ["four containers (each PID 1 of its own PID namespace)", 20, 4, true],
    ["eight processes of one PID namespace", 5, 8, false],
  ] as const) {
    it.skipIf(ownNs && process.getuid?.() !== 0)(
      `${label} restore into one folder at once, ${rounds} rounds: no partial entry, no skipped or falsely warned restore`,
      async () => {
        const tally = new Tally(`restores sharing one folder: ${label}`);
        const { dir, source, env } = raceProject(40);
        const seeded = await runMeasured(["save"], { env: env({}), cwd: dir });
        expect(seeded.code, seeded.stderr).toBe(0);
        for (let round = 0; round < rounds; round++) {
          const into = path.join(dir, `shared-${round}`);
          const runs = await Promise.all(
            Array.from({ length: width }, (_, k) =>
              kcacheIn(
                ["restore", "--json"],
                env({ CACHE_ROOT: into, KCACHE_STATE_DIR: path.join(dir, `st-${round}-${k}`) }),
                dir,
                ownNs,
              ),
            ),
          );
          for (const r of runs) {
            tally.run({ code: r.code, seconds: r.seconds, peakRssMb: null });
            tally.row.trials++;
            expect(r.code, r.stderr).toBe(0);
            expect(r.stderr, r.stderr).not.toMatch(/warning/);
            const report = JSON.parse(r.stdout) as {
              entriesRestored: number;
              entriesPresent: number;
              entriesBad: number;
            };
            expect(report.entriesBad).toBe(0);
          }
          const bad = corruptEntries(source, into);
          tally.row.corruptRestores += bad.length;
          expect(bad).toEqual([]);
          expect(
            fs
              .readdirSync(into)
              .filter((n) => !n.startsWith(".kcache-"))
              .sort(),
          ).toEqual(fs.readdirSync(source).sort());
          expect(fs.readdirSync(into).filter((n) => n.startsWith(".kcache-restore"))).toEqual([]);
        }
        tally.row.writesOutside = filesOutside(dir, ["kcache.yml", "source", "store"]).filter(
          (f) => !/^(shared|st|state)[^/]*\//.test(f),
        ).length;
        tally.save();
      },
    );
  }
});
