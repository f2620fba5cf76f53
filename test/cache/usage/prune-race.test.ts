import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { prune } from "../../../src/cache/usage/prune.js";
import { silentLog } from "../../../src/log.js";
import { localStore } from "../../../src/store/local.js";
import type { Store } from "../../../src/store/store.js";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../../fixtures/triton-cache.js";
import { runCli, startCli } from "../../helpers/cli.js";
import { project } from "../../helpers/project.js";
import { sandbox } from "../../helpers/sandbox.js";

const HOUR = 60 * 60 * 1000;

/** Ages every file of a local store by two hours, so `prune --older-than 1h` (default grace 1h) takes them. */
function ageStore(root: string): void {
  const old = new Date(Date.now() - 2 * HOUR);
  for (const e of fs.readdirSync(root, { recursive: true, withFileTypes: true }))
    if (e.isFile()) fs.utimesSync(path.join(e.parentPath, e.name), old, old);
}

/** A store that runs `prune --older-than 1h` to completion the first time the save reaches `at`. */
function pruningAt(inner: Store, at: "put" | "createIfAbsent"): Store {
  let fired = false;
  const runPrune = async () => {
    if (fired) return;
    fired = true;
    await prune(inner, { olderThanMs: HOUR, graceMs: HOUR }, silentLog());
  };
  return {
    ...inner,
    put: async (name, body) => {
      if (at === "put") await runPrune();
      return inner.put(name, body);
    },
    createIfAbsent: async (name, body) => {
      if (at === "createIfAbsent") await runPrune();
      return inner.createIfAbsent(name, body);
    },
  };
}

describe("prune racing a delta save never leaves a manifest pointing at a deleted pack", () => {
  it.each([
    ["before the save writes anything", "put"],
    ["after its packs, before its manifest", "createIfAbsent"],
  ] as const)("prune runs %s: the new key restores whole", async (_when, at) => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    generateTritonCache(folder, { entries: 20, totalBytes: 400_000 });
    expect((await save(await sb.context({ revision: "1".repeat(40) }))).outcome).toBe("saved");
    ageStore(sb.store);

    // The next revision's job: restores the old key, compiles one kernel, saves a delta that reuses the
    // old packs. The runner runs only trusted jobs (trust-local): its new kernel is its own without the hook.
    const ctx = await sb.context({
      revision: "2".repeat(40),
      config: sb.config({
        caches: [{ name: "triton", kind: "triton", path: folder, "trust-local": true }],
        store: { path: sb.store },
        key: { prefix: "bench" },
      }),
    });
    await restore(ctx);
    writeKernelEntry(folder, tritonKeyName("new-kernel"), "new_kernel", 4000, rng(5));
    ctx.store = pruningAt(localStore(sb.store), at);
    const saved = await save(ctx);
    expect(saved.outcome).toBe("saved");
    // The lease and the check before the manifest kept the packs: the save never had to withdraw its
    // key and pack again (the last line of defence, for clocks hours off), which a user sees warned.
    expect(ctx.log.warnings.filter((w) => /withdrew/.test(w))).toEqual([]);

    const fresh = path.join(sb.dir, "fresh");
    const back = await restore(
      await sb.context({
        revision: "2".repeat(40),
        stateDir: path.join(sb.dir, "fresh-state"),
        config: sb.config({
          caches: [{ name: "triton", kind: "triton", path: fresh }],
          store: { path: sb.store },
          key: { prefix: "bench" },
        }),
      }),
    );
    expect(back).toMatchObject({ cacheHit: true, entriesBad: 0, entriesRestored: 21 });
    expect(back.faults).toEqual([]);
  });
});

describe("killed saves leave no temporary files behind for good", () => {
  it("prune removes the temporary packs of saves killed mid-upload", async () => {
    const p = project();
    generateTritonCache(p.cache, { entries: 60, totalBytes: 40_000_000 });
    const tmp = path.join(p.store, ".tmp");
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        const child = startCli(["save"], { env: { ...p.env, GITHUB_SHA: String(i).repeat(40) }, cwd: p.dir });
        // Kill -9 the moment a temporary pack has bytes in it: the upload is under way.
        const poll = setInterval(() => {
          const names = fs.existsSync(tmp) ? fs.readdirSync(tmp) : [];
          if (names.some((n) => fs.statSync(path.join(tmp, n), { throwIfNoEntry: false })?.size)) {
            clearInterval(poll);
            child.kill();
          }
        }, 2);
        child.promise.then(() => {
          clearInterval(poll);
          resolve();
        }, reject);
      });
    }
    expect(fs.readdirSync(tmp).length).toBeGreaterThan(0);
    const pruned = await runCli(["prune", "--keep", "5"], { env: p.env, cwd: p.dir });
    expect(pruned.code).toBe(0);
    expect(fs.readdirSync(tmp)).toEqual([]);
    expect(pruned.stderr).toMatch(/removed \d+ temporary files left by killed saves/);
  });
});
