import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { corruptEntries, entryNames } from "../helpers/entry-compare.js";
import { type Fault, faultProxy, type ProxyLog } from "../helpers/fault-proxy.js";
import { type GhaCacheServer, startGhaCacheServer } from "../helpers/gha-cache-server.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { tempDir } from "../helpers/sandbox.js";
import { filesOutside, Tally } from "./harness.js";

/**
 * GitHub's cache service (the v2 protocol test server on Azurite) with a fault proxy in front of its
 * signed blob URLs: pack downloads cut short, stalled or never answered, uploads that hang, and
 * error statuses; for a key of one pack and of many. Every command must end within one idle timeout
 * (2 s here) plus the time to report, exit 0 (3 under --strict), never restore a damaged entry.
 */
let gha: GhaCacheServer;
beforeAll(async () => {
  gha = await startGhaCacheServer();
});
afterAll(async () => {
  await gha?.stop();
});

/** A default-branch push's step on a GitHub runner, its cache at `source`, `over` on top. */
function runnerEnv(
  dir: string,
  source: string,
  sha: string,
  over: Record<string, string>,
): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    PYTHONPATH: installedStack(),
    HOME: dir,
    ...gha.env,
    GITHUB_ACTIONS: "true",
    // A GitHub-hosted runner, as GitHub's cache service is: no other job writes its cache folder.
    RUNNER_ENVIRONMENT: "github-hosted",
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: sha.repeat(40),
    CACHE_ROOT: source,
    KCACHE_STATE_DIR: path.join(dir, "state"),
    ...over,
  };
}

const IDLE_S = 2;
/** What a command may take beyond the idle timeout: start-up, the probe, lookups and the report. */
const REPORT_S = 8;

type Choose = (key: string, method: string) => Fault;

/** Hung or stalled transfers of one command started after the first of them had had its idle timeout. */
function costlyStartsAfterStall(log: ProxyLog[]): string[] {
  const costly = log.filter((l) => l.fault === "hang" || l.fault === "stall");
  const first = costly[0];
  if (!first) return [];
  return costly.filter((l) => l.at >= first.at + IDLE_S * 1000).map((l) => `${l.method} ${l.url}`);
}
const pack = (key: string) => key.includes("/packs/");
/** Each pack's first download of a restore is reset midway (every other GET of it): the next is its resume. */
const gets = new Map<string, number>();
const resetOnce: Choose = (k, m) => {
  if (m !== "GET" || !pack(k)) return { kind: "pass" };
  const n = gets.get(k) ?? 0;
  gets.set(k, n + 1);
  return n % 2 === 0 ? { kind: "reset", bytes: 100_000 } : { kind: "pass" };
};
const FAULTS: [string, Choose, { restoreFails: boolean; saveFails: boolean; whole?: boolean }][] = [
  [
    "pack download reset once at 100 kB (resumed)",
    resetOnce,
    { restoreFails: false, saveFails: false, whole: true },
  ],
  [
    // Every request of it, resumes included: more cuts than a download resumes after.
    "pack download cut short at 10 kB, every time",
    (k, m) => (m === "GET" && pack(k) ? { kind: "truncate", bytes: 10_000 } : { kind: "pass" }),
    { restoreFails: true, saveFails: false },
  ],
  [
    "pack download stalls after 64 kB",
    (k, m) => (m === "GET" && pack(k) ? { kind: "stall", bytes: 64_000 } : { kind: "pass" }),
    { restoreFails: true, saveFails: false },
  ],
  [
    "pack download never answers",
    (k, m) => (m === "GET" && pack(k) ? { kind: "hang" } : { kind: "pass" }),
    { restoreFails: true, saveFails: false },
  ],
  [
    "blob upload hangs",
    (_k, m) => (m === "PUT" ? { kind: "hang" } : { kind: "pass" }),
    { restoreFails: false, saveFails: true },
  ],
  [
    "every blob request answers 500",
    () => ({ kind: "status", status: 500 }),
    { restoreFails: true, saveFails: true },
  ],
];

describe("GitHub's cache service with faulty blob transfers", () => {
  it.each(
    FAULTS.flatMap(([name, choose, fails]) => [1, 10].map((packs) => [name, packs, choose, fails] as const)),
  )(
    "GitHub cache: %s (a key of %i pack(s)): restore and save end within one idle timeout, exit 0, 3 under --strict",
    async (name, packs, choose, fails) => {
      const dir = tempDir("kcache-ghaf");
      const source = path.join(dir, "source");
      generateTritonCache(source, {
        entries: packs === 1 ? 12 : 60,
        totalBytes: packs === 1 ? 800_000 : 12_000_000,
        seed: 9,
      });
      fs.writeFileSync(
        path.join(dir, "kcache.yml"),
        `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  type: gha\n  idle-timeout: ${IDLE_S}s\nsave:\n  pack-mib: 1\nkey:\n  prefix: ${name.replace(/[^a-z0-9]+/gi, "-")}-${packs}\n`,
      );
      const env = (over: Record<string, string>) => runnerEnv(dir, source, "d", over);
      gha.routeBlobs(null);
      const first = await runMeasured(["save", "--json"], { env: env({}), cwd: dir });
      expect(first.code, first.stderr).toBe(0);
      const written = JSON.parse(first.stdout) as { packsWritten: number };
      if (packs > 1) expect(written.packsWritten).toBeGreaterThanOrEqual(packs);
      else expect(written.packsWritten).toBe(1);

      const proxy = await faultProxy(gha.blobOrigin, (req) =>
        choose(gha.keyOfBlobUrl(req.url ?? "") ?? "", req.method ?? ""),
      );
      gha.routeBlobs(proxy.endpoint);
      const tally = new Tally(`GitHub cache: ${name}, ${packs === 1 ? "one pack" : "many packs"}`);
      try {
        let i = 0;
        for (const strict of [false, true]) {
          const into = path.join(dir, `into-${i}`);
          const restoreFrom = proxy.log.length;
          const restore = await runMeasured(["restore", ...(strict ? ["--strict"] : [])], {
            env: env({
              CACHE_ROOT: into,
              KCACHE_STATE_DIR: path.join(dir, `rs-${i}`),
            }),
            cwd: dir,
            timeoutMs: 120_000,
          });
          tally.run(restore);
          const bad = corruptEntries(source, into);
          // A download resumed after a reset restores every entry of the key.
          if (fails.whole && entryNames(into).join() !== entryNames(source).join()) bad.push("not whole");
          if (bad.length) console.error(name, packs, bad.slice(0, 3));
          if (bad.length) tally.row.corruptRestores++;
          const job = path.join(dir, `job-${i}`);
          fs.cpSync(source, job, { recursive: true });
          // New entries to upload, beyond one pack's size for the many-pack key.
          for (let k = 0; k < (packs === 1 ? 1 : 8); k++)
            writeKernelEntry(
              job,
              tritonKeyName(`gha-new-${i}-${k}`),
              `n${i}_${k}`,
              packs === 1 ? 3000 : 600_000,
              rng(i * 10 + k),
            );
          const saveFrom = proxy.log.length;
          const save = await runMeasured(["save", ...(strict ? ["--strict"] : [])], {
            env: env({
              CACHE_ROOT: job,
              KCACHE_STATE_DIR: path.join(dir, `ss-${i}`),
              GITHUB_SHA: String(i + 1).repeat(40),
            }),
            cwd: dir,
            timeoutMs: 120_000,
          });
          tally.run(save);
          tally.row.trials += 2;
          expect(restore.code, restore.stderr).toBe(strict && fails.restoreFails ? 3 : 0);
          expect(save.code, save.stderr).toBe(strict && fails.saveFails ? 3 : 0);
          for (const r of [restore, save]) expect(r.stderr).not.toMatch(/internal error/);
          // One idle timeout per command: every transfer that hung or stalled was started before the
          // first of them was judged stalled (later packs are never started). Counted from the
          // proxy's log, not the clock: under the suite's load a 0.6 s save can take 12 s.
          expect(costlyStartsAfterStall(proxy.log.slice(restoreFrom, saveFrom)), restore.stderr).toEqual([]);
          expect(costlyStartsAfterStall(proxy.log.slice(saveFrom)), save.stderr).toEqual([]);
          // And never a hang, however loaded the machine.
          for (const r of [restore, save]) expect(r.seconds, r.stderr).toBeLessThan(3 * (IDLE_S + REPORT_S));
          if (!strict && fails.restoreFails) expect(restore.stderr).toMatch(/warning/);
          i++;
        }
        tally.row.writesOutside = filesOutside(dir, ["kcache.yml", "source"]).filter(
          (f) => !/^(into|rs|job|ss|state)[^/]*\//.test(f),
        ).length;
      } finally {
        gha.routeBlobs(null);
        await proxy.close();
      }
      const row = tally.save();
      expect(row).toMatchObject({ corruptRestores: 0, writesOutside: 0 });
    },
  );
});

describe("GitHub's cache service whose blob downloads hang, from the restore step to the save step", () => {
  it("the save after the job's restore downloads nothing: it waits no idle timeout, saves the key and writes its run record", async () => {
    const dir = tempDir("kcache-ghaget");
    const source = path.join(dir, "source");
    generateTritonCache(source, { entries: 12, totalBytes: 800_000, seed: 3 });
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  type: gha\n  idle-timeout: ${IDLE_S}s\nkey:\n  prefix: get-hangs\n`,
    );
    const env = (over: Record<string, string>) => runnerEnv(dir, source, "a", over);
    gha.routeBlobs(null);
    expect((await runMeasured(["save"], { env: env({}), cwd: dir })).code).toBe(0);
    const tally = new Tally("GitHub cache: every blob download hangs, the save step after the restore step");
    const next = env({ GITHUB_SHA: "b".repeat(40), KCACHE_STATE_DIR: path.join(dir, "state-b") });
    const restore = await runMeasured(["restore"], { env: next, cwd: dir });
    expect(restore.code, restore.stderr).toBe(0);
    tally.run(restore);
    writeKernelEntry(source, tritonKeyName("get-hangs-new"), "new_kernel", 5000, rng(3));
    const proxy = await faultProxy(gha.blobOrigin, (req) =>
      req.method === "GET" ? { kind: "hang" } : { kind: "pass" },
    );
    gha.routeBlobs(proxy.endpoint);
    try {
      const save = await runMeasured(["save", "--json"], { env: next, cwd: dir, timeoutMs: 120_000 });
      tally.run(save);
      tally.row.trials += 2;
      expect(save.code, save.stderr).toBe(0);
      expect(JSON.parse(save.stdout)).toMatchObject({ outcome: "saved", entriesNew: 1 });
      expect(save.stderr).not.toMatch(/warning/);
      // Nothing downloaded, so nothing waited on: the key and its run record went up.
      expect(proxy.log.filter((l) => l.method === "GET")).toEqual([]);
      expect([...gha.entries.keys()].some((k) => k.includes("runs/"))).toBe(true);
      expect(save.seconds).toBeLessThan(IDLE_S + REPORT_S);
    } finally {
      gha.routeBlobs(null);
      await proxy.close();
    }
    tally.save();
  });
});
