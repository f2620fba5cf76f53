import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { restore } from "../../src/cache/restore/restore.js";
import { save } from "../../src/cache/save/save.js";
import { scopesOf } from "../../src/keys/scope.js";
import { telemetryEnv } from "../../src/telemetry/hook.js";
import { readTelemetry } from "../../src/telemetry/read.js";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { entryNames } from "../helpers/entry-compare.js";
import { runSimWorkload } from "../helpers/python-sim.js";
import { sandbox, tempDir } from "../helpers/sandbox.js";

/** The environment GitHub gives a run of `event`, with its payload written where GITHUB_EVENT_PATH points. */
function githubEnv(event: string, payload: unknown, ref = "refs/heads/main"): NodeJS.ProcessEnv {
  const file = path.join(tempDir("event"), "event.json");
  fs.writeFileSync(
    file,
    JSON.stringify({ repository: { default_branch: "main", full_name: "org/lib" }, ...(payload as object) }),
  );
  return {
    GITHUB_ACTIONS: "true",
    GITHUB_EVENT_NAME: event,
    GITHUB_EVENT_PATH: file,
    GITHUB_REF: ref,
    GITHUB_RUN_ID: "777",
  };
}

/** Runs that GitHub starts with GITHUB_REF on the default branch though a pull request's code may run. */
const PR_LIKE: [string, () => NodeJS.ProcessEnv, string][] = [
  [
    "pull_request_target",
    () =>
      githubEnv("pull_request_target", { number: 12, pull_request: { number: 12, base: { ref: "main" } } }),
    "pr/12",
  ],
  [
    "issue_comment on a pull request",
    () => githubEnv("issue_comment", { issue: { number: 13, pull_request: { url: "x" } } }),
    "pr/13",
  ],
  [
    "workflow_run started by a pull request",
    () =>
      githubEnv("workflow_run", {
        workflow_run: { event: "pull_request", head_branch: "feat", pull_requests: [{ number: 14 }] },
      }),
    "pr/14",
  ],
  [
    "workflow_run of a fork's pull request (GitHub lists no pull request for forks)",
    () =>
      githubEnv("workflow_run", {
        workflow_run: {
          event: "pull_request",
          head_branch: "main",
          pull_requests: [],
          head_repository: { full_name: "evil/lib" },
        },
      }),
    "untrusted/workflow_run-777",
  ],
  [
    "an event kcache does not know",
    () => githubEnv("some_future_event", {}),
    "untrusted/some_future_event-777",
  ],
  [
    "a check_suite naming a pull request",
    () => githubEnv("check_suite", { check_suite: { pull_requests: [{ number: 15 }] } }),
    "pr/15",
  ],
];

describe("scopes from the event payload: no pull request's run writes the default branch's scope", () => {
  it.each(PR_LIKE)("%s saves into its own scope, never branch/main", async (_name, makeEnv, scope) => {
    const env = makeEnv();
    const plan = await scopesOf(env, "/");
    expect(plan.write).toBe(scope);
    expect(plan.read).not.toContain(undefined);
    expect(plan.read.at(-1)).toBe("branch/main");

    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "triton"), { entries: 4, totalBytes: 80_000 });
    const saved = await save(await sb.context({ env }));
    expect(saved).toMatchObject({ outcome: "saved", scope });
    const main = await restore(
      await sb.context({
        env: githubEnv("push", {}),
        stateDir: path.join(sb.dir, "main-state"),
        config: sb.config({
          caches: [{ name: "triton", kind: "triton", path: path.join(sb.dir, "main-cache") }],
          store: { path: sb.store },
          key: { prefix: "bench" },
        }),
      }),
    );
    expect(main.matchedKey).toBeNull();
  });

  it("keeps trusted events in their branch or tag scope, and reads the default branch from the payload", async () => {
    expect((await scopesOf(githubEnv("push", {}), "/")).write).toBe("branch/main");
    expect((await scopesOf(githubEnv("schedule", {}), "/")).write).toBe("branch/main");
    expect(await scopesOf(githubEnv("workflow_dispatch", {}, "refs/heads/dev"), "/")).toMatchObject({
      write: "branch/dev",
      read: ["branch/dev", "branch/main"],
    });
    expect((await scopesOf(githubEnv("push", {}, "refs/tags/v1.0"), "/")).write).toBe("tag/v1.0");
    const trunk = githubEnv("push", { repository: { default_branch: "trunk" } }, "refs/heads/feature");
    expect(await scopesOf(trunk, "/")).toMatchObject({
      write: "branch/feature",
      read: ["branch/feature", "branch/trunk"],
    });
    expect((await scopesOf(githubEnv("issue_comment", { issue: { number: 3 } }), "/")).write).toBe(
      "branch/main",
    );
    expect(
      (
        await scopesOf(
          githubEnv("workflow_run", { workflow_run: { event: "push", head_branch: "main" } }),
          "/",
        )
      ).write,
    ).toBe("branch/main");
  });

  it("on a runner that keeps its cache folder, a pull request's kernels never reach the default branch's save", async () => {
    const sb = sandbox();
    const folder = path.join(sb.dir, "triton");
    const mainEnv = githubEnv("push", {});
    generateTritonCache(folder, { entries: 6, totalBytes: 100_000, prefix: "main" });
    expect((await save(await sb.context({ env: mainEnv, revision: "1".repeat(40) }))).outcome).toBe("saved");
    const mainEntries = entryNames(folder);

    // A pull request's job on the same runner: restores main's cache, compiles its own kernel, saves to pr/21.
    const prEnv = githubEnv(
      "pull_request",
      { number: 21, pull_request: { number: 21 } },
      "refs/pull/21/merge",
    );
    const prState = path.join(sb.dir, "pr-state");
    await restore(await sb.context({ env: prEnv, revision: "2".repeat(40), stateDir: prState }));
    const planted = tritonKeyName("pr-only-kernel");
    writeKernelEntry(folder, planted, "pr_kernel", 5000, rng(9));
    expect(
      (await save(await sb.context({ env: prEnv, revision: "2".repeat(40), stateDir: prState }))).scope,
    ).toBe("pr/21");

    // The next main job, same folder: the PR's entry stays for the job (never colder), is counted as
    // local and unverified, and is not saved.
    const mainState = path.join(sb.dir, "main-state-2");
    const r = await restore(
      await sb.context({ env: mainEnv, revision: "3".repeat(40), stateDir: mainState }),
    );
    expect(r).toMatchObject({ entriesBefore: mainEntries.length + 1, entriesLocal: 1, entriesRestored: 0 });
    expect(entryNames(folder)).toEqual([...mainEntries, planted].sort());
    // The main job compiles under kcache's hook (kcache run, the action): on a folder other jobs may
    // write, what its own processes wrote is what its save may call its own.
    const telemetry = path.join(sb.dir, "main-telemetry.jsonl");
    const own = runSimWorkload(folder, {
      plain: 1,
      autotuned: 0,
      prefix: "mainnew",
      env: telemetryEnv({}, telemetry),
    });
    const t = readTelemetry(telemetry);
    const s = await save(await sb.context({ env: mainEnv, revision: "3".repeat(40), stateDir: mainState }), {
      hook: { complete: t.usageComplete, dirs: t.usedFolders, written: t.wroteFiles },
    });
    expect(s).toMatchObject({ outcome: "saved", scope: "branch/main", entriesNew: own.written.length });
    expect(s.leftOut.unverified.entries).toBe(1);
    const fresh = path.join(sb.dir, "fresh");
    await restore(
      await sb.context({
        env: mainEnv,
        revision: "3".repeat(40),
        stateDir: path.join(sb.dir, "fresh-state"),
        config: sb.config({
          caches: [{ name: "triton", kind: "triton", path: fresh }],
          store: { path: sb.store },
          key: { prefix: "bench" },
        }),
      }),
    );
    expect(entryNames(fresh)).not.toContain(planted);
    expect(entryNames(fresh)).toEqual([...mainEntries, ...own.written].sort());
  });
});
