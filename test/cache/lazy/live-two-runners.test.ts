import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_S3, s3Store } from "../../../src/store/s3.js";
import { runCli } from "../../helpers/cli.js";
import { SIM } from "../../helpers/python-sim.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../../helpers/s3rver.js";
import { tempDir } from "../../helpers/sandbox.js";

let server: S3Server;
beforeAll(async () => {
  server = await startS3rver();
});
afterAll(async () => {
  await server?.stop();
});

const N = 6;

/**
 * Two runners (two folders) and one S3 store (s3rver, a real S3-compatible server on 127.0.0.1) with
 * store.live: "hold" compiles N kernels and then waits for $GO before it ends (and saves); "use"
 * runs the same kernels; "planted" compiles one kernel of its own.
 */
function fleet() {
  const dir = tempDir("kcache-live");
  const go = path.join(dir, "go");
  const workload = (args: string) => `python3 ${SIM}/workload.py ${args}`;
  fs.writeFileSync(
    path.join(dir, "kcache.yml"),
    [
      "caches:\n  - name: triton\n    kind: triton\n    path: ${CACHE_ROOT}",
      `store:\n  type: s3\n  bucket: ${server.bucket}\n  prefix: live-fleet/\n  path-style: true\n  live: true`,
      "key:\n  prefix: fleet",
      "profiles:",
      "  hold:",
      `    env:\n      PYTHONPATH: ${SIM}\n      TRITON_SIM_COMPILE_MS: "40"`,
      "    commands:",
      `      - name: compile\n        run: ${workload(`${N} 0 --prefix shared`)}`,
      `      - name: wait\n        run: 'while [ ! -f "${go}" ]; do sleep 0.1; done'`,
      "  use:",
      `    env:\n      PYTHONPATH: ${SIM}\n      TRITON_SIM_COMPILE_MS: "40"`,
      `    commands:\n      - name: compile\n        run: ${workload(`${N} 0 --prefix shared`)}`,
      "  planted:",
      `    env:\n      PYTHONPATH: ${SIM}\n      TRITON_SIM_COMPILE_MS: "40"`,
      `    commands:\n      - name: compile\n        run: ${workload("1 0 --prefix planted")}`,
      "",
    ].join("\n"),
  );
  const env = (runner: string, sha: string, pr?: number): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: dir,
    ...S3RVER_CREDENTIALS,
    KCACHE_S3_ENDPOINT: server.endpoint,
    CACHE_ROOT: path.join(dir, runner, "triton"),
    KCACHE_STATE_DIR: path.join(dir, runner, "state"),
    GITHUB_ACTIONS: "true",
    GITHUB_REF: pr ? `refs/pull/${pr}/merge` : "refs/heads/main",
    GITHUB_EVENT_NAME: pr ? "pull_request" : "push",
    GITHUB_SHA: sha.repeat(40),
  });
  const run = async (profile: string, runner: string, sha: string, pr?: number) => {
    const r = await runCli(["run", "--profile", profile, "--json"], { env: env(runner, sha, pr), cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    if (process.env.DEBUG_LIVE)
      console.error(
        r.stderr
          .split("\n")
          .filter((l) => /CO|RLF|live/.test(l))
          .join("\n"),
      );
    return JSON.parse(r.stdout);
  };
  return { dir, go, run };
}

/** Live records in the store under a scope ("branch/main", "pr/7"). */
async function liveRecords(scope: string): Promise<string[]> {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  const store = s3Store({
    ...DEFAULT_S3,
    bucket: server.bucket,
    prefix: "live-fleet/",
    region: "us-east-1",
    endpoint: server.endpoint,
    forcePathStyle: true,
  });
  return (await store.list(`live/${encodeURIComponent(scope)}/`))
    .map((o) => o.name)
    .filter((n) => n.endsWith(".json"));
}

async function until(what: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("store.live: two runners, one S3 store (s3rver, a real S3-compatible server on 127.0.0.1)", () => {
  it("job B, started after A compiled and before A saved, compiles 0 of A's kernels; a pull request's live kernel never reaches a default-branch job", async () => {
    const f = fleet();
    // A: compiles N kernels (and their launchers), shares them live, then holds until $GO (no save yet).
    const a = f.run("hold", "runner-a", "a");
    await until(async () => (await liveRecords("branch/main")).length >= N, 120_000);
    const b = await f.run("use", "runner-b", "b");
    expect(b.restore.matchedKey).toBeNull(); // no key yet: A has not saved
    expect(b.kernels.compiled).toBe(0);
    expect(b.lazy.live).toBeGreaterThanOrEqual(N);
    // B's key never holds what it got live: only A's save may key A's kernels.
    expect(b.save.leftOut.live.entries).toBe(b.lazy.live);
    fs.writeFileSync(f.go, "");
    const held = await a;
    expect(held.save.outcome).toBe("saved");
    expect(held.lazy.liveWritten).toBeGreaterThanOrEqual(N);

    // C, a pull request, compiles a kernel and shares it under its own scope.
    const c = await f.run("planted", "runner-c", "c", 7);
    expect(c.kernels.compiled).toBe(1);
    expect((await liveRecords("pr/7")).length).toBeGreaterThan(0);
    // D, on the default branch, looks the same kernel up: never served the pull request's.
    const d = await f.run("planted", "runner-d", "d");
    expect(d.kernels.compiled).toBe(1);
    expect(d.lazy.live).toBe(0);
  });
});
