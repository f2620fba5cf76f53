import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { shellWord } from "../../src/ci/pipeline-parts.js";
import { ciKcacheYml } from "../helpers/ci-build.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

/** `kcache workflow --ci` as a user runs it: where the files go, --check, and what it refuses. */
describe("kcache workflow --ci", () => {
  const project = () => {
    const dir = tempDir("workflow-ci");
    fs.writeFileSync(path.join(dir, "kcache.yml"), ciKcacheYml({ local: path.join(dir, "store") }, "p"));
    const env = { PATH: process.env.PATH, HOME: dir };
    const cli = (...args: string[]) => runCli(["workflow", "--profile", "bench", ...args], { env, cwd: dir });
    return { dir, cli };
  };

  it("writes each system's file at the repository's root, and --check says when kcache.yml moved on", async () => {
    const { dir, cli } = project();
    const wrote = await cli("--ci", "gitlab", "--json");
    expect(wrote.code, wrote.stderr).toBe(0);
    expect(JSON.parse(wrote.stdout).files).toEqual([
      { profile: "bench", file: ".gitlab/kcache-bench.yml", status: "wrote" },
    ]);
    for (const ci of ["buildkite", "jenkins"]) expect((await cli("--ci", ci)).code).toBe(0);
    for (const f of [".buildkite/pipeline.kcache-bench.yml", "Jenkinsfile.kcache-bench"])
      expect(fs.existsSync(path.join(dir, f)), f).toBe(true);
    expect((await cli("--ci", "jenkins", "--check")).code).toBe(0);
    // The jitter the file was written with is read back from its header, as for GitHub's workflows.
    expect((await cli("--ci", "jenkins", "--jitter", "--seed", "org/kernels")).code).toBe(0);
    expect(fs.readFileSync(path.join(dir, "Jenkinsfile.kcache-bench"), "utf8")).not.toContain(
      "'TZ=Asia/Shanghai\\n0 0 ",
    );
    expect((await cli("--ci", "jenkins", "--check")).code).toBe(0);
    // The workload's own command is kcache.yml's, not the pipeline's; its setup is the pipeline's.
    const yml = fs.readFileSync(path.join(dir, "kcache.yml"), "utf8");
    fs.writeFileSync(path.join(dir, "kcache.yml"), yml.replace("3 1 --json", "4 1 --json"));
    expect((await cli("--ci", "gitlab", "--check")).code).toBe(0);
    fs.writeFileSync(path.join(dir, "kcache.yml"), yml.replace("echo set up", "echo ready"));
    const stale = await cli("--ci", "gitlab", "--check");
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain("regenerate: kcache workflow --ci gitlab --profile bench --out .");
    // GitHub's workflows are still the default, in their own folder.
    expect((await cli()).code).toBe(0);
    expect(fs.existsSync(path.join(dir, ".github/workflows/kcache-bench.yml"))).toBe(true);
  });

  it("refuses what another CI cannot take: --utc (they take the time zone), --step, an unknown system", async () => {
    const { cli } = project();
    const utc = await cli("--ci", "gitlab", "--utc");
    expect(utc.code).toBe(2);
    expect(utc.stderr).toContain("drop --utc");
    const step = await cli("--ci", "jenkins", "--step");
    expect(step.code).toBe(2);
    expect(step.stderr).toContain("drop --ci jenkins");
    const unknown = await cli("--ci", "circleci");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("buildkite");
  });

  it("quotes a word for the shell only when it must", () => {
    expect(shellWord(".kcache/bench")).toBe(".kcache/bench");
    expect(shellWord("src/**")).toBe("'src/**'");
    expect(shellWord("it's")).toBe("'it'\\''s'");
  });
});
