import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readCatalog } from "../../../src/cache/catalog.js";
import { save } from "../../../src/cache/save/save.js";
import { prune } from "../../../src/cache/usage/prune.js";
import { silentLog } from "../../../src/log.js";
import { decodeManifest, encodeManifest } from "../../../src/manifest/manifest.js";
import { localStore } from "../../../src/store/local.js";
import { generateTritonCache } from "../../fixtures/triton-cache.js";
import { runCli } from "../../helpers/cli.js";
import { project } from "../../helpers/project.js";
import { type Sandbox, sandbox } from "../../helpers/sandbox.js";

/*
 * What anyone who can write a scope of the store can leave there (a pull request's job writes its own
 * scope): names kcache never encoded, manifests that claim what their packs are not. Neither may end a
 * command in an internal error, nor make prune delete the default branch's keys.
 */

/** A full save of its own cache into `scope`'s key (main: a push; pr: pull request 12), dated `hoursAgo`. */
async function saved(sb: Sandbox, name: string, scope: "main" | "pr", hoursAgo: number, bytes: number) {
  const root = path.join(sb.dir, name);
  generateTritonCache(root, { entries: 4, totalBytes: bytes, seed: name.length, prefix: name });
  const cfg = sb.config({
    caches: [{ name: "triton", kind: "triton", path: root }],
    store: { path: sb.store },
    key: { prefix: "bench" },
  });
  const env =
    scope === "pr" ? { GITHUB_EVENT_NAME: "pull_request", GITHUB_REF: "refs/pull/12/merge" } : undefined;
  const r = await save(
    await sb.context({
      config: cfg,
      revision: name.padEnd(40, "0"),
      env,
      stateDir: path.join(sb.dir, `s-${name}`),
    }),
  );
  const dir = path.join(sb.store, "manifests", scope === "pr" ? "pr%2F12" : "branch%2Fmain");
  const file = path.join(dir, encodeURIComponent(r.primaryKey));
  const t = new Date(Date.now() - hoursAgo * 3600_000);
  fs.utimesSync(file, t, t);
  return { key: r.primaryKey, file };
}

/** A project whose default branch saved one key of 3 entries into its local store. */
async function savedProject(): Promise<ReturnType<typeof project>> {
  const p = project();
  generateTritonCache(p.cache, { entries: 3, totalBytes: 30_000 });
  expect((await runCli(["save"], { env: p.env, cwd: p.dir })).code).toBe(0);
  return p;
}

/** The default branch's key, restored on another runner (nothing of it on disk): every entry placed, no fault. */
async function restoresWhole(p: ReturnType<typeof project>, entries: number): Promise<void> {
  const fresh = {
    ...p.env,
    CACHE_ROOT: path.join(p.dir, "elsewhere"),
    KCACHE_STATE_DIR: path.join(p.dir, "s2"),
  };
  const restored = await runCli(["restore", "--json"], { env: fresh, cwd: p.dir });
  expect(restored.code, restored.stderr).toBe(0);
  expect(JSON.parse(restored.stdout)).toMatchObject({ entriesRestored: entries, faults: [] });
}

describe("prune's size budget and what a scope's writer can forge", () => {
  it("a pull request's manifest claiming a petabyte pack: prune counts the store's sizes and deletes none of main's keys", async () => {
    const sb = sandbox();
    const main = await saved(sb, "aa", "main", 3, 50_000);
    const pr = await saved(sb, "bbb", "pr", 1, 50_000);
    const m = decodeManifest(fs.readFileSync(pr.file), pr.file);
    fs.writeFileSync(
      pr.file,
      encodeManifest({ ...m, packs: m.packs.map((p) => ({ ...p, size: 10 ** 15 })) }),
    );
    fs.utimesSync(pr.file, new Date(), new Date(Date.now() - 3600_000));
    const r = await prune(localStore(sb.store), { maxBytes: 10 ** 9, graceMs: 0 }, silentLog());
    expect(r.manifestsDeleted).toEqual([]);
    expect((await readCatalog(localStore(sb.store))).map((i) => i.key).sort()).toEqual(
      [main.key, pr.key].sort(),
    );
  });

  it("over a real budget, the pull request's newer key goes before main's older one", async () => {
    const sb = sandbox();
    const main = await saved(sb, "aa", "main", 3, 60_000);
    const pr = await saved(sb, "bbb", "pr", 1, 60_000);
    // A budget one byte short of both keys' packs as the store holds them.
    const packs = await localStore(sb.store).list("packs/");
    const total = packs.reduce((a, p) => a + p.size, 0);
    const r = await prune(localStore(sb.store), { maxBytes: total - 1, graceMs: 0 }, silentLog());
    expect(r.manifestsDeleted.map((d) => d.key)).toEqual([pr.key]);
    expect((await readCatalog(localStore(sb.store))).map((i) => i.key)).toEqual([main.key]);
  });
});

describe("sizes a manifest claims", () => {
  it("kcache ls and stats give a key's packs at the size the store holds them, not the petabyte its manifest claims", async () => {
    const p = await savedProject();
    const dir = path.join(p.store, "manifests", "branch%2Fmain");
    const file = path.join(dir, fs.readdirSync(dir)[0] as string);
    const m = decodeManifest(fs.readFileSync(file), file);
    const real = m.packs.reduce((a, x) => a + x.size, 0);
    fs.writeFileSync(file, encodeManifest({ ...m, packs: m.packs.map((x) => ({ ...x, size: 10 ** 15 })) }));
    const ls = await runCli(["ls", "--json"], { env: p.env, cwd: p.dir });
    expect(JSON.parse(ls.stdout).keys.map((k: { bytes: number }) => k.bytes)).toEqual([real]);
    const stats = await runCli(["stats"], { env: p.env, cwd: p.dir });
    expect(stats.code, stats.stderr).toBe(0);
    expect(stats.stdout).not.toMatch(/TB|PB/);
  });
});

describe("store objects whose names kcache never encoded (a malformed escape)", () => {
  it("stats, ls and prune go on (exit 0), as if the objects were not kcache's", async () => {
    const p = await savedProject();
    const runs = path.join(p.store, "runs", "pr%2F12", "%E0%A4%A");
    fs.mkdirSync(runs, { recursive: true });
    fs.writeFileSync(path.join(runs, "x.json"), "{}");
    fs.mkdirSync(path.join(p.store, "manifests", "pr%2F12"), { recursive: true });
    fs.writeFileSync(path.join(p.store, "manifests", "pr%2F12", "k-%E0%A4%A"), "x");
    fs.mkdirSync(path.join(p.store, "live", "pr%2F12", "x", "%E0%A4%A"), { recursive: true });
    fs.writeFileSync(path.join(p.store, "live", "pr%2F12", "x", "%E0%A4%A", "%E0%A4%A.json"), "{}");
    for (const args of [["stats"], ["ls"], ["prune", "--dry-run"], ["prune", "--keep", "5"]]) {
      const r = await runCli(args, { env: p.env, cwd: p.dir });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stderr).not.toMatch(/internal error|URIError/);
    }
    const ls = await runCli(["ls", "--json"], { env: p.env, cwd: p.dir });
    expect(JSON.stringify(JSON.parse(ls.stdout))).toMatch(/trust-/);
  });
});

describe("the local store's temporary folder replaced by another writer", () => {
  it.each([
    ["a link to the default branch's packs", "packs/branch%2Fmain"],
    ["a link to its manifests", "manifests/branch%2Fmain"],
  ])(
    "%s: prune and the next save delete nothing of it, and the key restores whole",
    async (_label, target) => {
      const p = await savedProject();
      const old = new Date(Date.now() - 2 * 86_400_000);
      const objects = () =>
        fs
          .readdirSync(p.store, { recursive: true, withFileTypes: true })
          .filter((d) => d.isFile() && !d.parentPath.includes(".tmp"))
          .map((d) => path.relative(p.store, path.join(d.parentPath, d.name)))
          .sort();
      for (const f of objects()) fs.utimesSync(path.join(p.store, f), old, old);
      const before = objects();
      fs.rmSync(path.join(p.store, ".tmp"), { recursive: true, force: true });
      fs.symlinkSync(target, path.join(p.store, ".tmp"));
      const pruned = await runCli(["prune", "--keep", "10"], { env: p.env, cwd: p.dir });
      expect(pruned.code, pruned.stderr).toBe(0);
      fs.rmSync(path.join(p.store, ".tmp"), { recursive: true, force: true });
      fs.symlinkSync(target, path.join(p.store, ".tmp"));
      generateTritonCache(p.cache, { entries: 1, totalBytes: 5_000, seed: 9, prefix: "new" });
      const env = { ...p.env, GITHUB_SHA: "a".repeat(40) };
      expect((await runCli(["save"], { env, cwd: p.dir })).code).toBe(0);
      for (const f of before) expect(fs.existsSync(path.join(p.store, f)), f).toBe(true);
      await restoresWhole(p, 3);
    },
  );
});

describe("objects a scope's writer can leave that no reader should take whole", () => {
  it("a 5 GB sparse manifest and lease, a folder chain past PATH_MAX, a file at .tmp: prune goes on (exit 0) and main's key restores whole", async () => {
    const p = await savedProject();
    const pr = path.join(p.store, "manifests", "pr%2F7");
    fs.mkdirSync(pr, { recursive: true });
    fs.mkdirSync(path.join(p.store, "leases"), { recursive: true });
    for (const f of [path.join(pr, "kp-big"), path.join(p.store, "leases", "x.json")]) {
      fs.closeSync(fs.openSync(f, "w"));
      fs.truncateSync(f, 5 * 1024 ** 3);
    }
    const long = "a".repeat(200);
    execFileSync("bash", [
      "-c",
      `cd "$1" && for i in $(seq 25); do mkdir ${long} && cd ${long}; done && touch x`,
      "bash",
      pr,
    ]);
    fs.rmSync(path.join(p.store, ".tmp"), { recursive: true, force: true });
    fs.writeFileSync(path.join(p.store, ".tmp"), "not a folder");
    const pruned = await runCli(["prune", "--keep", "10", "--json"], { env: p.env, cwd: p.dir });
    expect(pruned.code, pruned.stderr).toBe(0);
    // The oversized manifest is damaged, so prune deletes it; the lease protects nothing.
    expect(JSON.parse(pruned.stdout).manifestsDeleted).toEqual([
      expect.objectContaining({
        scope: "pr/7",
        key: "kp-big",
        reason: expect.stringMatching(/damaged: .*refused/),
      }),
    ]);
    await restoresWhole(p, 3);
    generateTritonCache(p.cache, { entries: 1, totalBytes: 5_000, seed: 9, prefix: "new" });
    expect((await runCli(["save"], { env: { ...p.env, GITHUB_SHA: "a".repeat(40) }, cwd: p.dir })).code).toBe(
      0,
    );
    // Node's rm cannot name what lies past PATH_MAX; rm(1) walks it folder by folder.
    execFileSync("rm", ["-rf", path.join(pr, long)]);
  });
});
