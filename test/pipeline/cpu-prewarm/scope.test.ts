import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EDITS, prewarmProject } from "../../helpers/cpu-prewarm-project.js";

/*
 * Where `kcache prewarm --cpu` saves (issue 51): what it compiled of a pull request goes into that
 * pull request's own scope (pr/7, stored as manifests/pr%2F7/…) under the key its GPU job restores,
 * never into the default branch's, which every job reads. On the default branch it refuses.
 */

/** Every file in the store with its bytes: what a run added or changed. */
function storeFiles(store: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of fs.readdirSync(store, { recursive: true, withFileTypes: true })) {
    if (!f.isFile()) continue;
    const file = path.join(f.parentPath, f.name);
    const rel = path.relative(store, file);
    if (!rel.startsWith("runs/") && !rel.startsWith(".")) out.set(rel, fs.readFileSync(file, "base64"));
  }
  return out;
}

describe("kcache prewarm --cpu saves into the pull request's scope only", () => {
  it("a pull request: a key and plan under pr%2F7, the GPU job's stack and the PR's revision; branch/main untouched", async () => {
    const p = prewarmProject();
    const base = await p.mainJob();
    const mainBefore = [...storeFiles(p.store)].filter(([f]) => f.includes("branch%2Fmain"));
    const sha = p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.bwd });

    const r = await p.prewarm(p.prEnv(7, "cpu"));
    expect(r.code, r.stderr).toBe(0);
    const key = r.report?.key as string;
    // The key the pull request's GPU job restores: its prefix and stack id, at the PR's revision.
    expect(key).toBe(`ops-${base.report.stackId}-${sha}`);
    expect(r.report?.saved).toBe(key);
    expect(fs.existsSync(path.join(p.store, "manifests", "pr%2F7", key))).toBe(true);
    expect(p.manifests("pr/7")).toEqual([key]);
    expect(p.plans("pr/7").get(key)).toMatchObject({
      scope: "pr/7",
      key,
      revision: sha,
      prewarmed: { base: base.report.key, revision: sha },
    });
    // Nothing new or changed under the default branch's scope: its manifests, packs and plans as they were.
    const mainAfter = [...storeFiles(p.store)].filter(([f]) => f.includes("branch%2Fmain"));
    expect(mainAfter).toEqual(mainBefore);
    expect(p.manifests("branch/main")).toEqual([base.report.key]);

    // The GPU job of the pull request restores exactly that key.
    const gpu = await p.gpuJob(p.prEnv(7, "gpu"));
    expect(gpu.report.scope).toBe("pr/7");
    expect(gpu.report.restore?.matchedKey).toBe(key);
  });

  it("leaves nothing in the runner's temporary folder (its workers' plan, results and telemetry removed)", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.pullRequest("pr", { file: "lib/ops.py", change: EDITS.helper });
    for (const n of [7, 8]) {
      const r = await p.prewarm(p.prEnv(n, `cpu-${n}`), ["--workers", "2"]);
      expect(r.report?.counts.compiled).toBe(2);
    }
    expect(fs.readdirSync(p.tmp).filter((f) => f.startsWith("kcache-cpu-prewarm"))).toEqual([]);
  });

  it("on the default branch (a push to main): refused, nothing compiled, no key or plan written", async () => {
    const p = prewarmProject();
    await p.mainJob();
    p.commit("lib/ops.py", EDITS.bwd(fs.readFileSync(path.join(p.dir, "lib", "ops.py"), "utf8")));
    const before = storeFiles(p.store);
    const { GITHUB_EVENT_PATH: _e, GITHUB_HEAD_REF: _h, GITHUB_BASE_REF: _b, ...runner } = p.prEnv(7, "cpu");
    const env: NodeJS.ProcessEnv = { ...runner, GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" };
    const r = await p.prewarm(env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.report).toMatchObject({
      outcome: "refused",
      base: null,
      key: null,
      saved: null,
      counts: { unchanged: 0, compiled: 0, cached: 0, missing: 0, failed: 0 },
    });
    expect(r.report?.message).toMatch(
      /saves only into a pull request's own scope; this run writes branch\/main/,
    );
    expect(r.stderr).toMatch(/nothing compiled/);
    const cache = env.TRITON_CACHE_DIR as string;
    expect(fs.existsSync(cache) ? fs.readdirSync(cache) : []).toEqual([]);
    expect(storeFiles(p.store)).toEqual(before);
  });
});
