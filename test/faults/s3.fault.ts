import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { corruptEntries } from "../helpers/entry-compare.js";
import { type Fault, faultProxy } from "../helpers/fault-proxy.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";
import { filesOutside, Tally } from "./harness.js";

/** The idle and connect timeouts the scenarios' kcache.yml sets. */
const IDLE_S = 2;

let server: S3Server;
beforeAll(async () => {
  server = await startS3rver();
});
afterAll(async () => {
  await server?.stop();
});

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A pack object's own URL: its body, not a listing whose prefix names it (a save checks a reused pack's size by one). */
const isPack = (url = "") => url.split("?")[0]?.includes("/packs/") === true;
/** Name, what the proxy does to a request, and whether saves fail too (a fault only on pack downloads spares them). */
const FAULTS: [string, (url: string, method: string) => Fault | "down", boolean][] = [
  ["S3 down (connection refused)", () => "down", true],
  ["S3 hung (never answers)", () => ({ kind: "hang" }), true],
  [
    "S3 pack body stalls midway",
    (u, m) => (m === "GET" && isPack(u) ? { kind: "stall", bytes: 64_000 } : { kind: "pass" }),
    false,
  ],
  [
    "S3 pack body cut short",
    (u, m) => (m === "GET" && isPack(u) ? { kind: "truncate", bytes: 64_000 } : { kind: "pass" }),
    false,
  ],
  ["S3 answers 200 with garbage to everything", () => ({ kind: "garbage" }), true],
  ["S3 answers 503 to everything", () => ({ kind: "status", status: 503 }), true],
  ["S3 answers 429 to everything", () => ({ kind: "status", status: 429, retryAfter: "1" }), true],
];

describe("S3 faults through a fault-injecting proxy in front of s3rver", () => {
  // A key of one pack, and of many: a stalled store costs one idle timeout either way.
  it.each(
    FAULTS.flatMap(([name, choose, saveFails]) =>
      [1, 10].map((packs) => [name, packs, choose, saveFails] as const),
    ),
  )(
    "%s (a key of %i pack(s)): restore and save warn (exit 0), exit 3 under --strict, in bounded time",
    async (faultName, packs, choose, saveFails) => {
      const name = packs === 1 ? faultName : `${faultName}, many packs`;
      const dir = tempDir("kcache-s3f");
      const source = path.join(dir, "source");
      generateTritonCache(source, {
        entries: packs === 1 ? 30 : 60,
        totalBytes: packs === 1 ? 3_000_000 : 12_000_000,
        seed: 5,
      });
      fs.writeFileSync(
        path.join(dir, "kcache.yml"),
        `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  type: s3\n  bucket: ${server.bucket}\n  prefix: ${faultName.replace(/[^A-Za-z0-9]+/g, "-").slice(0, 40)}-${packs}/\n  path-style: true\n  idle-timeout: ${IDLE_S}s\n  connect-timeout: ${IDLE_S}s\n  retries: 1\nsave:\n  pack-mib: ${packs === 1 ? 64 : 1}\n`,
      );
      const env = (over: Record<string, string>): NodeJS.ProcessEnv => ({
        PATH: process.env.PATH,
        PYTHONPATH: installedStack(),
        HOME: dir,
        ...S3RVER_CREDENTIALS,
        GITHUB_REF: "refs/heads/main",
        GITHUB_SHA: "d".repeat(40),
        CACHE_ROOT: source,
        KCACHE_S3_ENDPOINT: server.endpoint,
        KCACHE_STATE_DIR: path.join(dir, "state"),
        ...over,
      });
      // The key exists in the store; then every call goes through the fault.
      const first = await runMeasured(["save", "--json"], { env: env({}), cwd: dir });
      expect(first.code).toBe(0);
      expect((JSON.parse(first.stdout) as { packsWritten: number }).packsWritten).toBeGreaterThanOrEqual(
        packs,
      );
      const proxy = await faultProxy(server.endpoint, (req) => {
        const f = choose(req.url ?? "", req.method ?? "");
        return f === "down" ? { kind: "pass" } : f;
      });
      const endpoint =
        choose("", "GET") === "down" ? `http://127.0.0.1:${await closedPort()}` : proxy.endpoint;
      const tally = new Tally(name);
      try {
        let i = 0;
        for (const strict of [false, true]) {
          const into = path.join(dir, `into-${i}`);
          const restore = await runMeasured(["restore", ...(strict ? ["--strict"] : [])], {
            env: env({
              KCACHE_S3_ENDPOINT: endpoint,
              CACHE_ROOT: into,
              KCACHE_STATE_DIR: path.join(dir, `rs-${i}`),
            }),
            cwd: dir,
            timeoutMs: 120_000,
          });
          tally.run(restore);
          if (corruptEntries(source, into).length) tally.row.corruptRestores++;
          // A job that compiled something new saves it under a new revision.
          const job = path.join(dir, `job-${i}`);
          fs.cpSync(source, job, { recursive: true });
          writeKernelEntry(job, tritonKeyName(`s3-new-${i}`), `n${i}`, 3000, rng(i));
          const save = await runMeasured(["save", ...(strict ? ["--strict"] : [])], {
            env: env({
              KCACHE_S3_ENDPOINT: endpoint,
              CACHE_ROOT: job,
              KCACHE_STATE_DIR: path.join(dir, `ss-${i}`),
              GITHUB_SHA: String(i + 1).repeat(40),
            }),
            cwd: dir,
            timeoutMs: 120_000,
          });
          tally.run(save);
          tally.row.trials += 2;
          expect(restore.code, restore.stderr).toBe(strict ? 3 : 0);
          expect(save.code, save.stderr).toBe(strict && saveFails ? 3 : 0);
          expect(`${restore.stderr}${save.stderr}`).not.toMatch(/internal error/);
          i++;
        }
        tally.row.writesOutside = filesOutside(dir, ["kcache.yml", "source"]).filter(
          (f) => !/^(into|rs|job|ss|state)[^/]*\//.test(f),
        ).length;
      } finally {
        await proxy.close();
      }
      const row = tally.save();
      expect(row).toMatchObject({ corruptRestores: 0, writesOutside: 0 });
      // Up to four idle timeouts (a lookup and its retry, a pack and its retry), one pack or many, plus
      // what a command costs here and now without a fault: the healthy save of the same key above (a
      // loaded machine stretches both alike), twice over for the load changing between them.
      expect(row.maxWallS).toBeLessThan(2 * first.seconds + 4 * IDLE_S);
    },
  );
});

describe("S3 connections reset mid-body under load", () => {
  it("32 concurrent restores, 5 rounds, one pack download in five reset midway: every restore completes whole", async () => {
    const dir = tempDir("kcache-s3-reset");
    const source = path.join(dir, "source");
    generateTritonCache(source, { entries: 60, totalBytes: 12_000_000, seed: 17 });
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  type: s3\n  bucket: ${server.bucket}\n  prefix: reset-under-load/\n  path-style: true\nsave:\n  pack-mib: 1\n`,
    );
    const env = (over: Record<string, string>): NodeJS.ProcessEnv => ({
      PATH: process.env.PATH,
      PYTHONPATH: installedStack(),
      HOME: dir,
      ...S3RVER_CREDENTIALS,
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: "e".repeat(40),
      CACHE_ROOT: source,
      KCACHE_S3_ENDPOINT: server.endpoint,
      KCACHE_STATE_DIR: path.join(dir, "state"),
      ...over,
    });
    const saved = await runMeasured(["save", "--json"], { env: env({}), cwd: dir });
    expect(saved.code, saved.stderr).toBe(0);
    const entries = (JSON.parse(saved.stdout) as { entries: number }).entries;
    let packGets = 0;
    // One pack download in five is reset after its first 100 kB (headers and bytes sent, then a TCP RST).
    const proxy = await faultProxy(server.endpoint, (req) =>
      req.method === "GET" && isPack(req.url) && ++packGets % 5 === 0
        ? { kind: "reset", bytes: 100_000 }
        : { kind: "pass" },
    );
    const tally = new Tally("S3 resets one pack download in five midway: 32 concurrent restores, 5 rounds");
    try {
      for (let round = 0; round < 5; round++) {
        const runs = await Promise.all(
          Array.from({ length: 32 }, (_, i) => {
            const into = path.join(dir, `r${round}-${i}`);
            return runMeasured(["restore", "--json"], {
              env: env({
                KCACHE_S3_ENDPOINT: proxy.endpoint,
                CACHE_ROOT: into,
                KCACHE_STATE_DIR: path.join(dir, `s${round}-${i}`),
              }),
              cwd: dir,
              timeoutMs: 240_000,
            }).then((r) => ({ r, into }));
          }),
        );
        for (const { r, into } of runs) {
          tally.run(r);
          tally.row.trials++;
          expect(r.code, r.stderr).toBe(0);
          const report = JSON.parse(r.stdout) as { entriesRestored: number; entriesBad: number };
          expect(report, r.stderr).toMatchObject({ entriesRestored: entries, entriesBad: 0 });
          if (corruptEntries(source, into).length) tally.row.corruptRestores++;
          fs.rmSync(into, { recursive: true, force: true });
        }
      }
      // About one reset per restore: 160 restores of about 12 packs each.
      expect(proxy.log.filter((l) => l.fault === "reset").length).toBeGreaterThan(160);
    } finally {
      await proxy.close();
    }
    const row = tally.save();
    expect(row).toMatchObject({ corruptRestores: 0, writesOutside: 0 });
  });
});
