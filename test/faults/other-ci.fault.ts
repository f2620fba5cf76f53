import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { S3RVER_CREDENTIALS, type S3Server, startS3rver } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";
import { Tally } from "./harness.js";

/*
 * docs/other-ci.md's pipelines, their `kcache` lines run as written under each system's variables in
 * a detached checkout (as GitLab, Buildkite and Jenkins check out), against one S3-compatible server
 * (s3rver on 127.0.0.1): a Buildkite pull request from a fork, a GitLab fork merge request and a
 * Jenkins change build compile kernels of their own beside default-branch builds of all three and a
 * scheduled prewarm. None of their kernels may reach a key the default branch restores.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");
const SIM = path.join(ROOT, "demo", "sim");
let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3rver("kernel-ci-cache");
});
afterAll(async () => {
  await s3?.stop();
});

/** Each system's pipeline in docs/other-ci.md: the lines of its job, and of its prewarm. */
function pipelines(): Record<"GitLab CI" | "Buildkite" | "Jenkins", { job: string[]; prewarm: string[] }> {
  const doc = fs.readFileSync(path.join(ROOT, "docs", "other-ci.md"), "utf8");
  const section = (title: string) => {
    const from = doc.indexOf(`## ${title}`);
    const to = doc.indexOf("\n## ", from + 1);
    const blocks = [...doc.slice(from, to).matchAll(/```(?:yaml|groovy)\n([\s\S]*?)```/g)].map(
      (m) => m[1] as string,
    );
    // The first block that runs kcache: its `kcache` lines (a YAML list item, a Jenkinsfile's sh
    // text), or for a step through kcache's Buildkite plugin what the plugin's hook runs.
    const block = blocks.find((b) => /^[ \t-]+kcache |profile: /m.test(b)) ?? "";
    const plugin = block.includes("buildkite-plugin")
      ? block
          .split(/^ {2}- label:/m)
          .slice(1)
          .map((step) => {
            const profile = /profile: (\S+)/.exec(step)?.[1];
            return `kcache ${/prewarm: true/.test(step) ? "prewarm" : "run"} --profile ${profile}`;
          })
      : [];
    const lines = [
      ...new Set([
        ...[...block.matchAll(/(?:^\s*-\s+|^[ \t]+|sh ')((?:kcache|python) [^'\n]*)/gm)].map(
          (m) => m[1] as string,
        ),
        ...plugin,
      ]),
    ];
    expect(lines.length, `docs/other-ci.md ${title}`).toBeGreaterThan(1);
    return {
      job: lines.filter((l) => !l.startsWith("kcache prewarm")),
      prewarm: lines.filter((l) => l.startsWith("kcache prewarm")),
    };
  };
  return { "GitLab CI": section("GitLab CI"), Buildkite: section("Buildkite"), Jenkins: section("Jenkins") };
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd })
    .toString()
    .trim();
}

describe("other CIs against one S3 store (docs/other-ci.md's pipelines)", () => {
  it("a Buildkite fork PR, a GitLab fork MR and a Jenkins change build never reach a key the default branch restores", async () => {
    const tally = new Tally(
      "pull requests on Buildkite, GitLab CI and Jenkins beside default-branch builds, one S3 store",
    );
    const steps = pipelines();
    const root = tempDir("other-ci");
    const checkout = path.join(root, "checkout");
    fs.mkdirSync(checkout);
    git(checkout, "init", "-q", "-b", "main");
    fs.writeFileSync(
      path.join(checkout, "kcache.yml"),
      [
        "caches:",
        '  - { name: triton, kind: triton, path: "${TRITON_CACHE_DIR}" }',
        "store: { type: s3, bucket: kernel-ci-cache, prefix: fla/, path-style: true }",
        "key: { prefix: fla-kda-bench }",
        "profiles:",
        "  kda-bench:",
        `    env: { PYTHONPATH: "${SIM}:${installedStack()}", TRITON_SIM_COMPILE_MS: "1" }`,
        "    commands:",
        `      - { name: bench, run: python3 ${SIM}/workload.py 3 1 --prefix $KERNEL_PREFIX }`,
        "",
      ].join("\n"),
    );
    git(checkout, "add", ".");
    git(checkout, "commit", "-qm", "one");
    const m1 = git(checkout, "rev-parse", "HEAD");
    git(checkout, "commit", "-q", "--allow-empty", "-m", "two");
    const m2 = git(checkout, "rev-parse", "HEAD");
    git(checkout, "checkout", "-qb", "fork-main", m1);
    git(checkout, "commit", "-q", "--allow-empty", "-m", "a fork's change");
    const p1 = git(checkout, "rev-parse", "HEAD");

    const gitlab = (sha: string, vars: Record<string, string>) => ({
      CI: "true",
      GITLAB_CI: "true",
      CI_PROJECT_ID: "10",
      CI_DEFAULT_BRANCH: "main",
      CI_PIPELINE_ID: String(Math.floor(Math.random() * 1e6)),
      CI_COMMIT_SHA: sha,
      ...vars,
    });
    const buildkite = (sha: string, vars: Record<string, string>) => ({
      CI: "true",
      BUILDKITE: "true",
      BUILDKITE_REPO: "git@github.com:fla-org/flash-linear-attention.git",
      BUILDKITE_PIPELINE_DEFAULT_BRANCH: "main",
      BUILDKITE_PULL_REQUEST: "false",
      BUILDKITE_PULL_REQUEST_REPO: "",
      BUILDKITE_TAG: "",
      BUILDKITE_COMMIT: sha,
      BUILDKITE_BUILD_ID: `b-${Math.floor(Math.random() * 1e6)}`,
      ...vars,
    });
    const jenkins = (sha: string, vars: Record<string, string>) => ({
      JENKINS_URL: "https://ci.example.org/",
      BUILD_TAG: `jenkins-fla-${Math.floor(Math.random() * 1e6)}`,
      GIT_COMMIT: sha,
      ...vars,
    });

    let build = 0;
    /** One build: a fresh runner folder, the checkout detached at `sha`, the pipeline's lines in order. */
    const runBuild = async (lines: string[], sha: string, vars: Record<string, string>, kernels: string) => {
      build++;
      git(checkout, "checkout", "-q", "--detach", sha);
      const runner = path.join(root, `runner-${build}`);
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: runner,
        PYTHONPATH: installedStack(),
        TRITON_CACHE_DIR: path.join(runner, "triton"),
        KCACHE_STATE_DIR: path.join(runner, "state"),
        KCACHE_S3_ENDPOINT: s3.endpoint,
        KERNEL_PREFIX: kernels,
        ...S3RVER_CREDENTIALS,
        ...vars,
      };
      const out: string[] = [];
      for (const line of lines) {
        if (line.startsWith("kcache ")) {
          const r = await runMeasured(line.split(" ").slice(1), { env, cwd: checkout });
          tally.run(r);
          out.push(r.stderr);
          expect(r.code, `${line}\n${r.stderr}`).toBe(0);
        } else {
          // The job's own command (FLA's benchmark): the simulated Triton workload in its place.
          execFileSync("python3", [path.join(SIM, "workload.py"), "3", "1", "--prefix", kernels], {
            env: { ...env, PYTHONPATH: SIM, TRITON_SIM_COMPILE_MS: "1" },
          });
        }
      }
      tally.row.trials++;
      return { log: out.join("\n"), folder: env.TRITON_CACHE_DIR as string };
    };

    // The scheduled prewarm fills the default branch's cache for main's head.
    const prewarm = await runBuild(
      steps["GitLab CI"].prewarm,
      m1,
      gitlab(m1, { CI_PIPELINE_SOURCE: "schedule", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
      "main",
    );
    expect(prewarm.log).toMatch(/prewarmed fla-kda-bench-\S+ \(saved\)/);
    // Pull requests from forks, each compiling kernels of its own ("planted").
    const prs = [
      await runBuild(
        steps.Buildkite.job,
        p1,
        buildkite(p1, {
          BUILDKITE_PULL_REQUEST: "42",
          BUILDKITE_PULL_REQUEST_REPO: "https://github.com/someone/flash-linear-attention.git",
          BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main",
          BUILDKITE_BRANCH: "main", // the fork's own branch named main
        }),
        "planted",
      ),
      await runBuild(
        steps["GitLab CI"].job,
        p1,
        gitlab(p1, {
          CI_PIPELINE_SOURCE: "merge_request_event",
          CI_MERGE_REQUEST_IID: "5",
          CI_MERGE_REQUEST_SOURCE_PROJECT_ID: "99",
          CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
          CI_COMMIT_REF_NAME: "main",
        }),
        "planted",
      ),
      await runBuild(
        steps.Jenkins.job,
        p1,
        jenkins(p1, { BRANCH_NAME: "PR-12", CHANGE_ID: "12", CHANGE_TARGET: "main", CHANGE_FORK: "someone" }),
        "planted",
      ),
    ];
    for (const [pr, scope] of prs.map((p, i) => [p, ["pr/42", "pr/5", "pr/12"][i]] as const))
      expect(pr.log, scope).toMatch(new RegExp(`saved .*|${scope}`));
    // Default-branch builds of all three at main's next commit.
    await runBuild(steps.Buildkite.job, m2, buildkite(m2, { BUILDKITE_BRANCH: "main" }), "main");
    await runBuild(
      steps.Jenkins.job,
      m2,
      jenkins(m2, { BRANCH_NAME: "main", BRANCH_IS_PRIMARY: "true" }),
      "main",
    );
    await runBuild(
      steps["GitLab CI"].job,
      m2,
      gitlab(m2, { CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "main", CI_COMMIT_REF_NAME: "main" }),
      "main",
    );

    // Every key in the store, by scope: the pull requests saved (into their own scopes only).
    const lsEnv = {
      PATH: process.env.PATH,
      HOME: root,
      KCACHE_S3_ENDPOINT: s3.endpoint,
      TRITON_CACHE_DIR: "/tmp/x",
      ...S3RVER_CREDENTIALS,
    };
    const ls = await runMeasured(["ls", "--json"], { env: lsEnv, cwd: checkout });
    expect(ls.code, ls.stderr).toBe(0);
    const keys = (JSON.parse(ls.stdout).keys as { key: string; scope: string }[]).map((k) => ({
      key: k.key,
      scope: k.scope,
    }));
    const scopes = new Set(keys.map((k) => k.scope));
    for (const s of ["pr/42", "pr/5", "pr/12", "branch/main"]) expect([...scopes]).toContain(s);
    expect([...scopes].every((s) => s === "branch/main" || s.startsWith("pr/"))).toBe(true);
    const planted = new Set(prs.flatMap((p) => kernelEntries(p.folder, "planted")));
    expect(planted.size).toBeGreaterThan(0);
    let foreign = 0;
    for (const k of keys.filter((k) => k.scope === "branch/main")) {
      const r = await runMeasured(["inspect", k.key, "--scope", "branch/main", "--json"], {
        env: lsEnv,
        cwd: checkout,
      });
      const [found] = JSON.parse(r.stdout) as { manifest: { entries: { name: string }[] } }[];
      foreign += (found?.manifest.entries ?? []).filter((e) => planted.has(e.name)).length;
    }
    // And a default-branch restore at a fresh runner receives none of them.
    const last = await runBuild(
      ["kcache restore --profile kda-bench"],
      m2,
      buildkite(m2, { BUILDKITE_BRANCH: "main" }),
      "main",
    );
    foreign += kernelEntries(last.folder, "planted").length;
    tally.row.foreignInDefault = foreign;
    const row = tally.save();
    expect(row.foreignInDefault).toBe(0);
    expect(kernelEntries(last.folder, "main").length).toBeGreaterThan(0);
  });
});

/** Entry folders holding a kernel whose name starts with `prefix` (the simulator names kernels so). */
function kernelEntries(folder: string, prefix: string): string[] {
  if (!fs.existsSync(folder)) return [];
  return fs.readdirSync(folder).filter((d) => {
    const dir = path.join(folder, d);
    return (
      fs.statSync(dir).isDirectory() && fs.readdirSync(dir).some((f) => f.startsWith(`__grp__${prefix}`))
    );
  });
}
