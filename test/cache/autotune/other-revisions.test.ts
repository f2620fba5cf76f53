import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../../src/cache/restore/restore.js";
import { save } from "../../../src/cache/save/save.js";
import { entryNames } from "../../helpers/entry-compare.js";
import { runSimWorkload } from "../../helpers/python-sim.js";
import { type Sandbox, sandbox } from "../../helpers/sandbox.js";

const PR = { GITHUB_REF: "refs/pull/9/merge", GITHUB_EVENT_NAME: "pull_request" };

async function ctxAt(
  sb: Sandbox,
  rev: string,
  folder: string,
  env: NodeJS.ProcessEnv = {},
  others: string[] = [],
) {
  const ctx = await sb.context({
    revision: rev.repeat(40),
    env,
    stateDir: path.join(sb.dir, `state-${rev}`),
    config: sb.config({
      caches: [{ name: "triton", kind: "triton", path: path.join(sb.dir, folder) }],
      store: { path: sb.store },
      key: { prefix: "bench" },
    }),
  });
  ctx.autotune = { ...ctx.autotune, otherRevisions: others.map((r) => r.repeat(40)) };
  return ctx;
}

describe("restore-revisions: both sides of a HEAD-vs-BASE comparison warm", () => {
  it("restores the union of the run's key and BASE's, and saves only what the job compiled, in its own scope", async () => {
    const sb = sandbox();
    // main at BASE (revision 1): kernels "base" and "gone".
    const c1 = await ctxAt(sb, "1", "m1");
    await restore(c1);
    runSimWorkload(path.join(sb.dir, "m1"), { plain: 2, autotuned: 0, prefix: "base" });
    const gone = runSimWorkload(path.join(sb.dir, "m1"), { plain: 1, autotuned: 0, prefix: "gone" }).written;
    await save(c1);
    // main moved on (revision 2): "gone" no longer used, so its key lacks it.
    const c2 = await ctxAt(sb, "2", "m2");
    await restore(c2);
    for (const e of gone) fs.rmSync(path.join(sb.dir, "m2", e), { recursive: true });
    runSimWorkload(path.join(sb.dir, "m2"), { plain: 1, autotuned: 0, prefix: "later" });
    await save(c2);

    // A pull request whose BASE is revision 1: its key and main's newest, plus BASE's.
    const pr = await ctxAt(sb, "5", "pr", PR, ["1"]);
    const r = await restore(pr);
    expect(r.matchedKey).toMatch(/2{40}$/);
    expect(r.otherKeys).toEqual([
      { key: expect.stringMatching(/1{40}$/), scope: "branch/main", entries: gone.length },
    ]);
    const work = path.join(sb.dir, "pr");
    for (const e of gone) expect(entryNames(work)).toContain(e);
    // The job: BASE's kernels and HEAD's load; it compiles only its own new one.
    expect(runSimWorkload(work, { plain: 1, autotuned: 0, prefix: "gone" }).written).toEqual([]);
    expect(runSimWorkload(work, { plain: 2, autotuned: 0, prefix: "base" }).written).toEqual([]);
    const mine = runSimWorkload(work, { plain: 1, autotuned: 0, prefix: "head" }).written;
    const s = await save(pr);
    expect(s).toMatchObject({ scope: "pr/9", entriesNew: mine.length });
    expect(s.leftOut.otherRevisions.entries).toBe(gone.length);
  });

  it("a revision with no key is said and skipped; the restore goes on", async () => {
    const sb = sandbox();
    const ctx = await ctxAt(sb, "1", "a", {}, ["7"]);
    const logs: string[] = [];
    ctx.log = { ...ctx.log, info: (m: string) => logs.push(m) };
    const r = await restore(ctx);
    expect(r.otherKeys).toEqual([]);
    expect(logs.join("\n")).toMatch(/no key for revision 777777777777/);
  });
});
