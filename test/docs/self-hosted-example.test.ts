import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { actionForTests, ROOT, RunnerJob } from "../helpers/action-runner.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * docs/self-hosted.md's "FLA's H100 runner" step, as written (its inputs taken from the page), run by
 * the action on one runner whose home folder persists: a default-branch job, then a pull request's,
 * then the default branch again on a fresh runner. The store is the page's s3:// bucket on a real
 * S3-compatible server (s3rver) on 127.0.0.1.
 */
const ACTION = actionForTests("self-hosted");
const SIM = path.join(ROOT, "demo", "sim");
let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3rver("fla-ci-cache");
});
afterAll(async () => {
  await s3?.stop();
});

/** The `with:` of the kcache step in the page's section, with the workflow's expression filled in. */
function documentedInputs(): Record<string, string> {
  const page = fs.readFileSync(path.join(ROOT, "docs", "self-hosted.md"), "utf8");
  const section = page.slice(page.indexOf("## FLA's H100 runner, with kcache"));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error("docs/self-hosted.md: the FLA H100 example's yaml block is gone");
  const steps = parse(block) as { uses: string; with: Record<string, string | boolean> }[];
  const step = steps.find((s) => s.uses.startsWith("kcache/kcache"));
  if (!step) throw new Error("docs/self-hosted.md: the example has no kcache step");
  return Object.fromEntries(
    Object.entries(step.with).map(([k, v]) => [
      k,
      String(v).replace("${{ inputs.conda_env_name }}", "py312"),
    ]),
  );
}

const kernelsIn = (folder: string) =>
  fs.existsSync(folder)
    ? fs
        .readdirSync(folder)
        .filter((d) => !d.startsWith(".kcache"))
        .flatMap((d) => {
          const dir = path.join(folder, d);
          return fs.statSync(dir).isDirectory() ? fs.readdirSync(dir).filter((f) => f.endsWith(".json")) : [];
        })
    : [];

describe("docs/self-hosted.md's H100 runner example, as written", () => {
  it("isolates pull requests on the shared runner and fills the store from the default branch", async () => {
    const inputs = documentedInputs();
    expect(inputs).toMatchObject({
      path: "~/.triton/cache",
      isolate: "true",
      store: "s3://fla-ci-cache/h100",
    });
    expect(inputs.kind).toBeUndefined(); // the page leaves kind out: kcache knows it from the path

    const root = tempDir("self-hosted");
    const runnerHome = path.join(root, "runner-home");
    fs.mkdirSync(runnerHome);
    const runnerFolder = path.join(runnerHome, ".triton", "cache");
    const storeEnv = {
      ...S3RVER_CREDENTIALS,
      KCACHE_S3_ENDPOINT: s3.endpoint,
      KCACHE_S3_PATH_STYLE: "1",
      KCACHE_STATE_DIR: path.join(runnerHome, ".kcache-state"),
    };
    const event = path.join(root, "pr-event.json");
    fs.writeFileSync(
      event,
      JSON.stringify({
        pull_request: { number: 5, base: { ref: "main" } },
        repository: { default_branch: "main", full_name: "fla-org/flash-linear-attention" },
      }),
    );
    const runJob = async (name: string, vars: Record<string, string>, home: string, prefix: string) => {
      const j = new RunnerJob(root, name, { HOME: home, ...storeEnv, ...vars }, ACTION);
      const step = await j.uses("", inputs);
      expect(step.code, step.log).toBe(0);
      const out = j.run("python3", [path.join(SIM, "workload.py"), "3", "1", "--prefix", prefix], {
        PYTHONPATH: SIM,
        TRITON_SIM_COMPILE_MS: "1",
      });
      const [post] = await j.end();
      expect(post?.result?.code, post?.result?.log).toBe(0);
      return {
        step,
        post: post?.result?.log ?? "",
        run: JSON.parse(out.trim().split("\n").at(-1) as string),
      };
    };

    const main = await runJob(
      "main-1",
      { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main", GITHUB_SHA: "a".repeat(40) },
      runnerHome,
      "chunk",
    );
    expect(main.step.log).toMatch(/works in .*\.kcache-job-.* \(isolate\)/);
    expect(main.run.compiled).toBeGreaterThan(0);
    expect(main.post).toMatch(/saved fla-tests-py312-/);
    const mainKernels = kernelsIn(runnerFolder);
    expect(mainKernels.length).toBeGreaterThan(0); // merged back: the job passed on the default branch

    const pr = await runJob(
      "pr-5",
      {
        GITHUB_EVENT_NAME: "pull_request",
        GITHUB_REF: "refs/pull/5/merge",
        GITHUB_BASE_REF: "main",
        GITHUB_EVENT_PATH: event,
        GITHUB_SHA: "b".repeat(40),
      },
      runnerHome,
      "planted",
    );
    expect(pr.step.log).toMatch(/\(isolate\)/);
    expect(pr.run.compiled).toBeGreaterThan(0); // its own kernels
    expect(pr.post).toMatch(/saved .* into pr\/5|scope pr\/5|pr\/5/);
    // The pull request's kernels never reached the runner's folder.
    expect(kernelsIn(runnerFolder).sort()).toEqual(mainKernels.sort());
    expect(kernelsIn(runnerFolder).some((f) => f.startsWith("planted"))).toBe(false);

    // A fresh runner on the default branch restores main's kernels from the store, none of the PR's.
    const fresh = path.join(root, "fresh-home");
    fs.mkdirSync(fresh);
    const next = await runJob(
      "main-2",
      { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main", GITHUB_SHA: "c".repeat(40) },
      fresh,
      "chunk",
    );
    expect(next.run.compiled).toBe(0);
    expect(kernelsIn(path.join(fresh, ".triton", "cache")).some((f) => f.startsWith("planted"))).toBe(false);
  });
});
