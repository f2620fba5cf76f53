import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readCatalog } from "../../src/cache/catalog.js";
import { restore } from "../../src/cache/restore/restore.js";
import { localStore } from "../../src/store/local.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { BIN, runCli } from "../helpers/cli.js";
import { sandbox } from "../helpers/sandbox.js";
import { treeDigests } from "../helpers/tree.js";

function writeConfig(dir: string, store: string) {
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\nstore:\n  path: ${store}\nkey:\n  prefix: race\n`,
  );
}

const packFiles = (store: string) =>
  fs.existsSync(path.join(store, "packs"))
    ? fs
        .readdirSync(path.join(store, "packs"), { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile())
    : [];

describe("concurrent and interrupted saves", () => {
  it("leaves exactly one valid manifest when savers race for one key", async () => {
    const sb = sandbox();
    writeConfig(sb.dir, sb.store);
    const caches = Array.from({ length: 4 }, (_, i) => {
      const root = path.join(sb.dir, `runner-${i}`);
      generateTritonCache(root, { entries: 15, totalBytes: 600_000, seed: 5 });
      return root;
    });
    const results = await Promise.all(
      caches.map((root, i) =>
        runCli(["save", "--json"], {
          env: { ...sb.env, CACHE_ROOT: root, KCACHE_STATE_DIR: path.join(sb.dir, `state-${i}`) },
          cwd: sb.dir,
        }),
      ),
    );
    const outcomes = results.map((r) => (JSON.parse(r.stdout) as { outcome: string }).outcome);
    expect(results.every((r) => r.code === 0)).toBe(true);
    expect(outcomes.filter((o) => o === "saved")).toHaveLength(1);
    expect(outcomes.filter((o) => o !== "saved").every((o) => o === "lost-race" || o === "key-exists")).toBe(
      true,
    );

    const catalog = await readCatalog(localStore(sb.store));
    expect(catalog).toHaveLength(1);
    expect(catalog[0]?.damaged).toBeNull();
    // The losers removed their packs: only the winner's remain.
    expect(packFiles(sb.store)).toHaveLength(catalog[0]?.manifest?.packs.length ?? -1);

    const r = await runCli(["restore", "--json"], {
      env: {
        ...sb.env,
        CACHE_ROOT: path.join(sb.dir, "dest"),
        KCACHE_STATE_DIR: path.join(sb.dir, "s-dest"),
      },
      cwd: sb.dir,
    });
    expect(JSON.parse(r.stdout)).toMatchObject({ cacheHit: true, entriesRestored: 15, entriesBad: 0 });
  });

  it("a save killed mid-upload leaves no manifest and nothing a restore can see", async () => {
    const sb = sandbox();
    writeConfig(sb.dir, sb.store);
    const root = path.join(sb.dir, "runner");
    generateTritonCache(root, { entries: 200, totalBytes: 60_000_000, seed: 8 });
    const tmp = path.join(sb.store, ".tmp");
    // Killed in the phase it means to interrupt: a pack's upload under way, the process still running.
    await killDuring(
      () => spawn(process.execPath, [BIN, "save"], { env: { ...sb.env, CACHE_ROOT: root }, cwd: sb.dir }),
      () => fs.existsSync(tmp) && fs.readdirSync(tmp).length > 0,
    );

    expect(fs.existsSync(path.join(sb.store, "manifests"))).toBe(false);
    const r = await restore(await sb.context({ stateDir: path.join(sb.dir, "s2") }));
    expect(r.matchedKey).toBeNull();
  });

  it("a restore killed midway leaves only whole entries, and the next restore completes", async () => {
    const sb = sandbox();
    writeConfig(sb.dir, sb.store);
    const src = path.join(sb.dir, "runner");
    generateTritonCache(src, { entries: 300, totalBytes: 60_000_000, seed: 9 });
    expect((await runCli(["save"], { env: { ...sb.env, CACHE_ROOT: src }, cwd: sb.dir })).code).toBe(0);

    const dest = path.join(sb.dir, "dest");
    const env = { ...sb.env, CACHE_ROOT: dest, KCACHE_STATE_DIR: path.join(sb.dir, "s-dest") };
    // Killed while entries are being placed: some are in the folder, the process still running.
    await killDuring(
      () => spawn(process.execPath, [BIN, "restore"], { env, cwd: sb.dir }),
      () => fs.existsSync(dest) && fs.readdirSync(dest).filter((n) => !n.startsWith(".kcache-")).length >= 3,
    );

    const s = treeDigests(src);
    const d = treeDigests(dest);
    const entries = new Set([...d.keys()].map((k) => k.split("/")[0]));
    expect(entries.size).toBeGreaterThanOrEqual(3);
    for (const e of entries) {
      const want = [...s.keys()].filter((k) => k.startsWith(`${e}/`)).sort();
      expect([...d.keys()].filter((k) => k.startsWith(`${e}/`)).sort()).toEqual(want);
    }
    const again = await runCli(["restore", "--json"], { env, cwd: sb.dir });
    const report = JSON.parse(again.stdout) as {
      entriesRestored: number;
      entriesPresent: number;
      entriesBad: number;
    };
    expect(report.entriesBad).toBe(0);
    expect(report.entriesRestored + report.entriesPresent).toBe(300);
    expect(report.entriesRestored).toBeGreaterThan(0);
    // No staging left; only the marker that says a job (this one, until its save) uses the folder.
    const privateNames = fs.readdirSync(dest).filter((n) => n.startsWith(".kcache-"));
    expect(privateNames).toHaveLength(1);
    expect(privateNames[0]).toMatch(/^\.kcache-live-/);
  });
});

/**
 * Starts a process and kills it (-9) as soon as `reached` holds while it is still running. Asserts the
 * kill landed in that phase: a process that had already exited proves nothing about being killed.
 */
async function killDuring(start: () => ChildProcess, reached: () => boolean): Promise<void> {
  const child = start();
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on("close", (code, signal) => r({ code, signal })),
  );
  let exited = false;
  void closed.then(() => {
    exited = true;
  });
  await waitFor(() => reached() || exited);
  // Stop it first, so the check that it is still mid-phase and the kill see the same moment.
  child.kill("SIGSTOP");
  const midway = !exited && child.exitCode === null;
  child.kill("SIGKILL");
  const end = await closed;
  expect(midway && end.signal === "SIGKILL", "the process finished before the phase to interrupt").toBe(true);
}

async function waitFor(cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 2));
  }
}
