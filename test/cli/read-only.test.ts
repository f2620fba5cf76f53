import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTritonCache, tritonKeyName } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";
import { upstreamRequest } from "../helpers/upstream-request.js";

/*
 * Read-only mode (store/read-only.ts): restore as ever, write nothing to the store, say so in one
 * line, exit 0. Entered by --read-only, KCACHE_READ_ONLY=1 or kcache.yml's store.read-only, and by
 * a store that forbids a write (HTTP 403): credentials that may read and not write.
 */

/** Every file under `dir` with its size and mtime, "" when there is none: what a store holds. */
function storeFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => !e.isDirectory())
    .map((e) => {
      const p = path.join(e.parentPath, e.name);
      const st = fs.statSync(p);
      return `${path.relative(dir, p)} ${st.size} ${st.mtimeMs}`;
    })
    .sort();
}

/** A profile whose one command compiles one entry of its own (a launcher), as a job would. */
const ENTRY = tritonKeyName("read-only-job");
const PROFILE = `profiles:\n  bench:\n    prefix: ro-bench\n    commands:\n      - name: compile\n        run: mkdir -p "$CACHE_ROOT/${ENTRY}" && echo so > "$CACHE_ROOT/${ENTRY}/__triton_launcher.so"\n`;

/** The stderr lines that speak of read-only mode, and those that warn. */
function said(stderr: string): { readOnly: string[]; warnings: string[] } {
  const lines = stderr.split("\n");
  return {
    readOnly: lines.filter((l) => /read-only/.test(l)),
    warnings: lines.filter((l) => /warning/.test(l)),
  };
}

describe("read-only mode on a local store", () => {
  it("save, run and prune under --read-only, KCACHE_READ_ONLY=1 or store.read-only write nothing and say one line; restore works as usual", async () => {
    const p = project({ prefix: "ro" });
    fs.appendFileSync(path.join(p.dir, "kcache.yml"), PROFILE);
    generateTritonCache(p.cache, { entries: 6, totalBytes: 60_000 });
    // The store as a first save leaves it: what the read-only commands below must leave untouched.
    const first = await runCli(["save", "--json"], { env: p.env, cwd: p.dir });
    expect(first.code, first.stderr).toBe(0);
    generateTritonCache(p.cache, { entries: 4, totalBytes: 40_000, seed: 2, prefix: "more" });
    const before = storeFiles(p.store);
    expect(before.length).toBeGreaterThan(0);

    const readOnlyYml = path.join(p.dir, "read-only.yml");
    fs.writeFileSync(
      readOnlyYml,
      fs
        .readFileSync(path.join(p.dir, "kcache.yml"), "utf8")
        .replace(`  path: ${p.store}\n`, `  path: ${p.store}\n  read-only: true\n`),
    );
    const ways: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
      ["--read-only", ["--read-only"], p.env, /\(--read-only\)/],
      ["KCACHE_READ_ONLY=1", [], { ...p.env, KCACHE_READ_ONLY: "1" }, /\(KCACHE_READ_ONLY=1\)/],
      ["store.read-only", ["--config", readOnlyYml], p.env, /\(store\.read-only in .*read-only\.yml\)/],
    ];
    for (const [way, flags, env, why] of ways) {
      for (const args of [
        ["save", ...flags],
        ["save", "--strict", ...flags],
        ["run", "--profile", "bench", ...flags],
      ]) {
        // A run on a fresh runner folder: its command's entry is its own, which its save would upload.
        const runner = args[0] === "run" ? { CACHE_ROOT: tempDir("ro-runner") } : {};
        const r = await runCli(args, { env: { ...env, ...runner }, cwd: p.dir });
        expect(r.code, `${way}: kcache ${args.join(" ")}\n${r.stderr}`).toBe(0);
        const { readOnly, warnings } = said(r.stderr);
        expect(readOnly, `${way}: kcache ${args.join(" ")}`).toHaveLength(1);
        expect(readOnly[0]).toMatch(/^kcache: read-only \(.+\): restore only, nothing saved$/);
        expect(readOnly[0]).toMatch(why);
        expect(warnings).toEqual([]);
        expect(storeFiles(p.store), `${way}: kcache ${args.join(" ")} wrote to the store`).toEqual(before);
      }
    }
    const json = await runCli(["save", "--json", "--read-only"], { env: p.env, cwd: p.dir });
    expect(JSON.parse(json.stdout)).toMatchObject({ outcome: "read-only", readOnly: "--read-only" });

    // prune: what it would delete, nothing deleted.
    const pruned = await runCli(["prune", "--keep", "0", "--read-only"], { env: p.env, cwd: p.dir });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stderr).toMatch(/read-only \(--read-only\): nothing deleted/);
    expect(pruned.stderr).toMatch(/would delete 1 keys/);
    expect(storeFiles(p.store)).toEqual(before);

    // Restore as usual, at another runner's path.
    const restored = await runCli(["restore", "--json", "--read-only"], {
      env: { ...p.env, CACHE_ROOT: path.join(p.dir, "runner-2"), KCACHE_STATE_DIR: path.join(p.dir, "s2") },
      cwd: p.dir,
    });
    expect(restored.code, restored.stderr).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({ cacheHit: true, entriesRestored: 6 });
    expect(storeFiles(p.store)).toEqual(before);

    // The same commands without read-only do write: the comparison above means something.
    const run = await runCli(["run", "--profile", "bench", "--json"], {
      env: { ...p.env, CACHE_ROOT: tempDir("ro-runner") },
      cwd: p.dir,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).save).toMatchObject({ outcome: "saved", entriesNew: 1 });
    expect(storeFiles(p.store)).not.toEqual(before);
  });
});

describe("read-only mode on an S3 store that forbids writes (HTTP 403)", () => {
  let s3: S3Server;
  beforeAll(async () => {
    s3 = await startS3rver("kcache-ro");
  });
  afterAll(async () => {
    await s3?.stop();
  });

  /** A proxy in front of s3rver that answers every write (PUT, POST, DELETE) 403 AccessDenied, as S3 does for read-only keys. */
  async function readOnlyKeys(): Promise<{ endpoint: string; writes: string[]; close(): Promise<void> }> {
    const writes: string[] = [];
    const upstream = new URL(s3.endpoint);
    const server = http.createServer((req, res) => {
      if (req.method !== "GET" && req.method !== "HEAD") {
        writes.push(`${req.method} ${req.url}`);
        req.resume();
        res.writeHead(403, { "Content-Type": "application/xml" });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>',
        );
        return;
      }
      const up = upstreamRequest(upstream, req, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on("error", () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      writes,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }

  it("restores fine, then saves nothing with exit 0 and one line, trying one write and no other (--strict: exit 3)", async () => {
    const dir = tempDir("ro-s3");
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      `caches:\n  - { name: triton, kind: triton, path: "\${CACHE_ROOT}" }\nstore: { type: s3, bucket: kcache-ro, prefix: ro/, path-style: true }\nkey: { prefix: ro }\n${PROFILE}`,
    );
    const base = project();
    const env = (endpoint: string, runner: string, revision: string): NodeJS.ProcessEnv => ({
      PATH: process.env.PATH,
      PYTHONPATH: base.env.PYTHONPATH,
      HOME: dir,
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: revision.repeat(40),
      CACHE_ROOT: path.join(dir, runner, "cache"),
      KCACHE_STATE_DIR: path.join(dir, runner, "state"),
      KCACHE_S3_ENDPOINT: endpoint,
      ...S3RVER_CREDENTIALS,
    });
    // A job with write credentials saves the key.
    generateTritonCache(path.join(dir, "a", "cache"), { entries: 5, totalBytes: 50_000 });
    const seeded = await runCli(["save"], { env: env(s3.endpoint, "a", "f"), cwd: dir });
    expect(seeded.code, seeded.stderr).toBe(0);
    const stored = storeFiles(s3.dir);

    const proxy = await readOnlyKeys();
    try {
      // A job of the next revision whose credentials only read: the restore works as usual.
      const b = env(proxy.endpoint, "b", "e");
      const restored = await runCli(["restore", "--json"], { env: b, cwd: dir });
      expect(restored.code, restored.stderr).toBe(0);
      expect(JSON.parse(restored.stdout)).toMatchObject({
        matchedKey: expect.stringMatching(/f{40}$/),
        entriesRestored: 5,
      });
      expect(proxy.writes).toEqual([]);

      // Its job compiled more; the save's first write is refused: one line, no retry, no other write.
      generateTritonCache(b.CACHE_ROOT as string, { entries: 3, totalBytes: 30_000, seed: 3, prefix: "new" });
      // `kcache run` on a fresh runner: its command compiles an entry of its own, which its save would upload.
      const c = env(proxy.endpoint, "c", "e");
      for (const [args, runner, code] of [
        [["save"], b, 0],
        [["save", "--strict"], b, 3],
        [["run", "--profile", "bench"], c, 0],
      ] as const) {
        proxy.writes.length = 0;
        const r = await runCli([...args], { env: runner, cwd: dir });
        const what = `kcache ${args.join(" ")}: ${proxy.writes.join(", ")}\n${r.stderr}`;
        expect(r.code, what).toBe(code);
        const { readOnly } = said(r.stderr);
        expect(readOnly, what).toHaveLength(1);
        expect(readOnly[0]).toMatch(/read-only \(S3 store .* forbids writes: HTTP 403 AccessDenied\)/);
        expect(proxy.writes, what).toHaveLength(1);
        expect(r.stderr).not.toMatch(/run record not written/);
      }
      expect(storeFiles(s3.dir)).toEqual(stored);
    } finally {
      await proxy.close();
    }
  });
});
