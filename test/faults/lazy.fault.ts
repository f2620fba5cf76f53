import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeManifest, type EntryRef, type Manifest } from "../../src/manifest/manifest.js";
import { liveObjects } from "../../src/store/layout.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { type Fault, faultProxy } from "../helpers/fault-proxy.js";
import { tarOf } from "../helpers/hostile-pack.js";
import { lazyKcacheYml } from "../helpers/lazy-project.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { runSimWorkload } from "../helpers/python-sim.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";
import { filesOutside, randomInt, Tally } from "./harness.js";

let server: S3Server;
beforeAll(async () => {
  server = await startS3rver();
});
afterAll(async () => {
  await server?.stop();
});

/**
 * The idle timeout the S3 projects set: a lookup gives the store up after this. Long enough that the
 * restore before the fault does not reach it on a loaded machine: at 2 s, with the fault suite's 1 GB
 * memory rows beside it, a job's restore once came back with nothing deferred (no lazy plan: most
 * likely the healthy store given up on before the fault), and the row failed (2026-12-04).
 */
const IDLE_S = 5;

/**
 * A project whose Triton cache is restored lazily: "full" compiles 8 kernels and 2 autotuned ones,
 * "some" uses 2 of the kernels. Its key is seeded by full (revision a) then some (revision b), so a
 * later full job gets 2 kernels ahead and looks the rest up. Before the workload, the job touches
 * $FLIP: a fault proxy turns on then, mid-job, after the restore.
 */
function lazyProject(store: "local" | "local-live" | { prefix: string; live?: boolean }) {
  const dir = tempDir("kcache-lazy-fault");
  const storeYaml =
    store === "local" || store === "local-live"
      ? `store:\n  path: ${path.join(dir, "store")}${store === "local-live" ? "\n  live: true" : ""}`
      : `store:\n  type: s3\n  bucket: ${server.bucket}\n  prefix: ${store.prefix}/\n  path-style: true\n  idle-timeout: ${IDLE_S}s\n  connect-timeout: ${IDLE_S}s\n  retries: 1${store.live ? "\n  live: true" : ""}`;
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    lazyKcacheYml({
      store: [storeYaml],
      profiles: { full: "8 2", some: "2 0" },
      before: [{ name: "flip", run: 'touch "$FLIP"' }],
      compileMs: 30,
    }),
  );
  const env = (runner: string, sha: string, over: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: dir,
    ...S3RVER_CREDENTIALS,
    KCACHE_S3_ENDPOINT: server.endpoint,
    CACHE_ROOT: path.join(dir, runner, "triton"),
    KCACHE_STATE_DIR: path.join(dir, runner, "state"),
    FLIP: path.join(dir, runner, "flipped"),
    GITHUB_REF: "refs/heads/main",
    GITHUB_EVENT_NAME: "push",
    GITHUB_SHA: sha.repeat(40),
    ...over,
  });
  const run = (
    profile: string,
    runner: string,
    sha: string,
    over: NodeJS.ProcessEnv = {},
    onStart?: (pid: number) => void,
  ) =>
    runMeasured(["run", "--profile", profile, "--json"], {
      env: env(runner, sha, over),
      cwd: dir,
      timeoutMs: 120_000,
      onStart,
    });
  const seed = async () => {
    for (const [profile, runner, sha] of [
      ["full", "seed", "a"],
      ["some", "used", "b"],
    ] as const) {
      const r = await run(profile, runner, sha);
      expect(r.code, r.stderr).toBe(0);
    }
  };
  return { dir, run, seed, folder: (runner: string) => path.join(dir, runner, "triton") };
}

/**
 * The job folder's entries that differ from the seed's (corruptEntries), but for the empty folder
 * kcache run keeps as a tripwire at $TRITON_CACHE_DIR/cache (a killed run leaves it).
 */
function corrupt(seed: string, job: string): string[] {
  // An empty entry folder is Triton's own: its FileCacheManager makes the folder as it looks a kernel
  // up, so a job stopped before it compiled (kcache's watchdog ends the job once kcache is killed)
  // leaves one. It holds no kernel, and Triton compiles into it: not an entry placed half.
  const emptyFolder = (line: string) => {
    const folder = path.join(job, line.split(":")[0] as string);
    return (
      fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory() && fs.readdirSync(folder).length === 0
    );
  };
  const lines = corruptEntries(seed, job).filter((l) => !l.startsWith("cache: ") && !emptyFolder(l));
  if (lines.length) console.error(lines.join("\n"));
  return lines;
}

interface RunJson {
  passed: boolean;
  kernels: { compiled: number };
  restore: { lazy: { prefetched: number; deferred: number } | null };
  lazy: {
    onDemand: number;
    failed: number;
    waitSeconds: number;
    storeDown: string | null;
    liveWritten: number;
    liveFailed: number;
    liveFlushSeconds: number;
  } | null;
}

/** The store failing once the job's first command ran (after the restore), as each row names it. */
const midJobFaults = (row: "lazy" | "live"): [string, Fault][] => [
  [`${row}: the store hangs mid-job (every request after the restore never answered)`, { kind: "hang" }],
  [`${row}: the store is killed mid-job (every connection after the restore reset)`, { kind: "drop" }],
];

/**
 * The "full" job on runner "job" at revision `sha`, its store requests through a proxy that turns
 * `fault` on when the job's first command touches $FLIP; counted in `tally`.
 */
async function runWithFaultMidJob(
  p: ReturnType<typeof lazyProject>,
  fault: Fault,
  sha: string,
  tally: Tally,
): Promise<Awaited<ReturnType<typeof runMeasured>>> {
  const flip = path.join(p.dir, "job", "flipped");
  const proxy = await faultProxy(server.endpoint, () => (fs.existsSync(flip) ? fault : { kind: "pass" }));
  try {
    const r = await p.run("full", "job", sha, { KCACHE_S3_ENDPOINT: proxy.endpoint });
    tally.run(r);
    tally.row.trials++;
    return r;
  } finally {
    await proxy.close();
  }
}

describe("restore: lazy, the store failing mid-job", () => {
  it.each(midJobFaults("lazy"))(
    "%s: the job passes, compiles what it could not fetch, within one idle timeout in all",
    async (name, fault) => {
      const p = lazyProject({ prefix: name.replace(/[^a-z]+/g, "-").slice(0, 30) });
      await p.seed();
      const tally = new Tally(name);
      const r = await runWithFaultMidJob(p, fault, "c", tally);
      expect(r.code, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as RunJson;
      expect(report.restore.lazy?.deferred).toBeGreaterThan(0);
      // The first lookup met the fault and gave the store up; the job compiled what it lacked.
      expect(report.lazy?.storeDown).toBeTruthy();
      expect(report.lazy?.onDemand).toBe(0);
      expect(report.kernels.compiled).toBeGreaterThan(0);
      // One idle timeout in all, however many entries the job then looked up.
      expect(report.lazy?.waitSeconds).toBeLessThan(IDLE_S + 1.5);
      expect(r.stderr).toMatch(/the store was given up on/);
      if (corrupt(p.folder("seed"), p.folder("job")).length) tally.row.corruptRestores++;
      tally.row.writesOutside = filesOutside(p.dir, ["kcache.yml", ".kcache", "seed", "used", "job"]).length;
      expect(tally.save()).toMatchObject({ corruptRestores: 0, writesOutside: 0 });
    },
  );
});

describe("store.live, the store failing mid-job", () => {
  it.each(midJobFaults("live"))(
    "%s: the job passes, its new kernels go unshared, and its end waits one idle timeout at most for them",
    async (name, fault) => {
      const p = lazyProject({ prefix: name.replace(/[^a-z]+/g, "-").slice(0, 30), live: true });
      const tally = new Tally(name);
      // Nothing saved yet: the job compiles every kernel, and each one it completes is to be shared live.
      const r = await runWithFaultMidJob(p, fault, "a", tally);
      expect(r.code, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as RunJson;
      expect(report.passed).toBe(true);
      expect(report.kernels.compiled).toBeGreaterThan(0);
      expect(report.lazy?.liveWritten).toBe(0);
      expect(report.lazy?.liveFailed).toBeGreaterThan(0);
      // The first failed upload gives the store up: the job's end waits for what was under way, once.
      expect(report.lazy?.liveFlushSeconds).toBeLessThan(IDLE_S + 1.5);
      expect(r.stderr).toMatch(/not shared \(the store failed\)/);
      tally.row.writesOutside = filesOutside(p.dir, ["kcache.yml", ".kcache", "job"]).length;
      expect(tally.save()).toMatchObject({ writesOutside: 0 });
    },
  );
});

/** The key's entries that the restore leaves in the store (not used at its last save), with the pack's file. */
function deferredOf(storeDir: string): {
  manifest: Manifest;
  deferred: (EntryRef & { frame: [number, number] })[];
} {
  const mdir = path.join(storeDir, "manifests", encodeURIComponent("branch/main"));
  const newest = fs
    .readdirSync(mdir)
    .map((f) => decodeManifest(fs.readFileSync(path.join(mdir, f)), f))
    .sort((a, b) => (a.generation ?? 0) - (b.generation ?? 0))
    .pop() as Manifest;
  const deferred = newest.entries.filter(
    (e): e is EntryRef & { frame: [number, number] } =>
      e.frame !== undefined && e.usedIn !== newest.generation,
  );
  return { manifest: newest, deferred };
}

/** A zstd skippable frame of exactly `n` bytes (n >= 8): decompressors pass over it. */
function skippable(n: number): Buffer {
  const b = Buffer.alloc(n);
  b.writeUInt32LE(0x184d2a50, 0);
  b.writeUInt32LE(n - 8, 4);
  return b;
}

describe("restore: lazy, hostile entry frames in the store", () => {
  const HOSTILE: [string, (victim: string, other: string) => Buffer][] = [
    ["wrong digest", (v) => tarOf([{ type: "File", path: `triton/${v}/__grp__x.json`, data: "{}" }])],
    [
      "oversized (expands past the entry's promise)",
      (v) => tarOf([{ type: "Zeros", path: `triton/${v}/big.cubin`, size: 24 * 1024 * 1024 }]),
    ],
    ["another entry's name", (_v, o) => tarOf([{ type: "File", path: `triton/${o}/evil.json`, data: "{}" }])],
    [
      "a path outside the cache",
      (v) => tarOf([{ type: "File", path: `triton/${v}/../../../../evil`, data: "x" }]),
    ],
  ];
  it("a frame replaced by a hostile one (wrong digest, oversized, another entry's name, a path outside) is refused, and that kernel compiles", async () => {
    const tally = new Tally(
      "lazy: a hostile entry frame (wrong digest, oversized, another entry's name, a path outside)",
    );
    for (const [label, make] of HOSTILE) {
      const p = lazyProject("local");
      await p.seed();
      const store = path.join(p.dir, "store");
      const { manifest, deferred } = deferredOf(store);
      // The largest deferred kernel the full job will look up; another entry whose folder must stay as it is.
      const kernels = deferred.filter((e) =>
        fs.readdirSync(path.join(p.folder("seed"), e.name)).some((f) => f.startsWith("__grp__")),
      );
      const victim = kernels.sort((a, b) => b.frame[1] - a.frame[1])[0] as (typeof deferred)[number];
      const other = manifest.entries.find(
        (e) => e.name !== victim.name && e.usedIn === manifest.generation,
      ) as EntryRef;
      const hostile = execFileSync("zstd", ["-q", "-c", "-19"], { input: make(victim.name, other.name) });
      expect(hostile.length + 8, label).toBeLessThanOrEqual(victim.frame[1]);
      const packFile = path.join(store, (manifest.packs[victim.pack] as { object: string }).object);
      const pack = fs.readFileSync(packFile);
      Buffer.concat([hostile, skippable(victim.frame[1] - hostile.length)]).copy(pack, victim.frame[0]);
      fs.writeFileSync(packFile, pack);

      const r = await p.run("full", "job", "c");
      tally.run(r);
      tally.row.trials++;
      expect(r.code, `${label}: ${r.stderr}`).toBe(0);
      const report = JSON.parse(r.stdout) as RunJson;
      expect(report.lazy, label).toMatchObject({ failed: 1, storeDown: null });
      expect(report.kernels.compiled, label).toBe(1);
      expect(fs.existsSync(path.join(p.folder("job"), other.name, "evil.json")), label).toBe(false);
      if (corrupt(p.folder("seed"), p.folder("job")).length) tally.row.corruptRestores++;
      tally.row.writesOutside += filesOutside(p.dir, [
        "kcache.yml",
        ".kcache",
        "seed",
        "used",
        "job",
        "store",
      ]).length;
    }
    expect(tally.save()).toMatchObject({ corruptRestores: 0, writesOutside: 0 });
  });
});

describe("restore: lazy, kcache killed", () => {
  it("kill -9 of kcache run while it fetches and places entries for the job: no partial entry, and the next job is warm", async () => {
    const tally = new Tally("lazy: kill -9 during on-demand fetches and placements");
    for (let trial = 0; trial < 5; trial++) {
      const p = lazyProject("local");
      await p.seed();
      let timer: NodeJS.Timeout | undefined;
      const r = await p.run("full", "job", "c", {}, (pid) => {
        // Somewhere in the job: its commands start after the restore (~0.5 s), its lookups follow.
        timer = setTimeout(
          () => {
            try {
              process.kill(pid, "SIGKILL");
            } catch {
              // already done
            }
          },
          randomInt(400, 1600),
        );
      });
      clearTimeout(timer);
      tally.run(r);
      tally.row.trials++;
      // The job's Python process outlives kcache (it was not killed); let it finish what it compiles.
      await new Promise((done) => setTimeout(done, 2_000));
      if (corrupt(p.folder("seed"), p.folder("job")).length) tally.row.corruptRestores++;
      expect(corrupt(p.folder("seed"), p.folder("job"))).toEqual([]);
      // The next job on this runner: nothing to compile, whatever the kill left.
      const next = await p.run("full", "job", "d");
      tally.run(next);
      tally.row.trials++;
      expect(next.code, next.stderr).toBe(0);
      expect((JSON.parse(next.stdout) as RunJson).kernels.compiled).toBe(0);
    }
    expect(tally.save()).toMatchObject({ corruptRestores: 0 });
  });
});

describe("store.live, hostile live objects", () => {
  it("a live record or pack that is not what it says (wrong digest, oversized, another entry's name, a path outside) is refused, and the kernel compiles", async () => {
    const tally = new Tally(
      "live: a hostile live object (wrong digest, oversized, another entry's name, a path outside)",
    );
    // The entry folders the job compiles, learnt from one run of it elsewhere (the simulator's keys are fixed).
    const oracle = tempDir("oracle");
    const names = runSimWorkload(path.join(oracle, "triton"), {
      plain: 8,
      autotuned: 2,
      compileMs: 1,
    }).written;
    const victim = names.find((n) =>
      fs.readdirSync(path.join(oracle, "triton", n)).some((f) => f.startsWith("__grp__")),
    );
    const other = names.find((n) => n !== victim) as string;
    const v = victim as string;
    const pack = (members: Parameters<typeof tarOf>[0]) =>
      execFileSync("zstd", ["-q", "-c"], { input: tarOf(members) });
    const honest = tarOf(
      fs.readdirSync(path.join(oracle, "triton", v)).map((f) => ({
        type: "File" as const,
        path: `triton/${v}/${f}`,
        data: fs.readFileSync(path.join(oracle, "triton", v, f)),
      })),
    );
    const HOSTILE: [string, Buffer, Record<string, unknown>][] = [
      ["wrong digest", execFileSync("zstd", ["-q", "-c"], { input: honest }), { sha256: "0".repeat(64) }],
      [
        "oversized",
        pack([{ type: "Zeros", path: `triton/${v}/big.cubin`, size: 24 << 20 }]),
        { size: 2 ** 40 },
      ],
      ["another entry's name", pack([{ type: "File", path: `triton/${other}/evil.json`, data: "{}" }]), {}],
      ["a path outside", pack([{ type: "File", path: `triton/${v}/../../../../evil`, data: "x" }]), {}],
    ];
    for (const [label, body, lie] of HOSTILE) {
      const p = lazyProject("local-live");
      const stackId = await stackIdOf(p.dir);
      const objects = liveObjects("branch/main", stackId, "triton", v);
      const store = path.join(p.dir, "store");
      fs.mkdirSync(path.dirname(path.join(store, objects.pack)), { recursive: true });
      fs.writeFileSync(path.join(store, objects.pack), body);
      const record = {
        format: "kcache-live/1",
        cache: "triton",
        name: v,
        sha256: "a".repeat(64),
        size: 200_000,
        files: 8,
        packBytes: body.length,
        key: "x",
        at: new Date().toISOString(),
        ...lie,
      };
      fs.writeFileSync(path.join(store, objects.record), JSON.stringify(record));

      const r = await p.run("full", "job", "c");
      tally.run(r);
      tally.row.trials++;
      expect(r.code, `${label}: ${r.stderr}`).toBe(0);
      const report = JSON.parse(r.stdout) as RunJson & { lazy: { live: number; failed: number } };
      expect(report.lazy?.live, label).toBe(0);
      expect(report.lazy?.storeDown, label).toBeNull();
      // The victim's lookup found the live object and refused it; the kernel compiled.
      expect(report.lazy?.failed, label).toBeGreaterThanOrEqual(1);
      expect(report.kernels.compiled, label).toBeGreaterThan(0);
      expect(fs.existsSync(path.join(p.folder("job"), other, "evil.json")), label).toBe(false);
      if (corrupt(path.join(oracle, "triton"), p.folder("job")).length) tally.row.corruptRestores++;
      tally.row.writesOutside += filesOutside(p.dir, ["kcache.yml", ".kcache", "job", "store"]).length;
    }
    expect(tally.save()).toMatchObject({ corruptRestores: 0, writesOutside: 0 });
  });
});

/** The stack id kcache run keys by in this project (this machine's Python stack). */
async function stackIdOf(dir: string): Promise<string> {
  const state = tempDir("stack-state");
  const r = await runMeasured(["stack", "--json"], {
    env: { PATH: process.env.PATH, HOME: dir, KCACHE_STATE_DIR: state },
    cwd: dir,
  });
  return (JSON.parse(r.stdout) as { stackId: string }).stackId;
}
