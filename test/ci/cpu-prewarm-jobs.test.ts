import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  buildkiteSteps,
  buildkiteVariables,
  PLUGIN_DIR,
  pluginEnv,
  type Step,
  stepRuns,
} from "../helpers/buildkite.js";
import {
  type CiCheckout,
  ciCheckout,
  installVariable,
  PROFILE,
  runnerEnv,
  runReport,
  runShell,
  storeKeys,
  takeCalls,
  writePipeline,
} from "../helpers/ci-build.js";
import { gitlabJobs, gitlabVariables, type Job, jobShell, jobsRun } from "../helpers/gitlab-ci.js";
import { jenkinsVariables, readJenkinsfile, stageRuns } from "../helpers/jenkinsfile.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * github.cpu-prewarm in `kcache workflow --ci gitlab|buildkite|jenkins`: the CPU prewarm job on
 * merge, pull and change requests only, before the job, never blocking it (GitLab: allow_failure and
 * an optional need; Buildkite: soft_fail and a dependency whose failure is allowed, ignored where the
 * step is left out; Jenkins: a stage before the job's, on an agent of its own, its failure caught),
 * its install line run before `kcache prewarm --cpu`; each run by a shell in a detached checkout
 * against a local store, the job after it saving into the merge request's scope as before.
 */
const CPU_PREWARM = ["cpu-prewarm:", "  install: echo installed > installed.txt", "  workers: 2"];
const CPU_JOB = `kcache-${PROFILE}-cpu-prewarm`;
const JOB = `kcache-${PROFILE}`;
const PREWARM = `kcache-${PROFILE}-prewarm`;
const CPU_LINE = `kcache prewarm --cpu --profile ${PROFILE} --workers 2`;

function checkout(): CiCheckout {
  const c = ciCheckout({ local: path.join(tempDir("store"), "store") }, CPU_PREWARM);
  fs.appendFileSync(path.join(c.dir, ".git/info/exclude"), "installed.txt\n");
  return c;
}

/** What `kcache prewarm --cpu` said it did: there is no GPU job's key with a compile plan yet. */
const NO_PLAN = /holds a compile plan/;

describe("kcache workflow --ci gitlab with github.cpu-prewarm", () => {
  it("runs the CPU prewarm on merge requests only, before the job, allowed to fail; the job needs it only where it is in the pipeline", async () => {
    const c = checkout();
    const text = await writePipeline(c, "gitlab", `.gitlab/kcache-${PROFILE}.yml`);
    expect(text).toContain(`On merge requests ${CPU_JOB} runs first`);
    const jobs = gitlabJobs(text);
    expect(Object.keys(jobs).filter((j) => !j.startsWith("."))).toEqual([CPU_JOB, JOB, PREWARM]);
    const cpu = jobs[CPU_JOB] as Job;
    expect(cpu).toMatchObject({ stage: "test", allow_failure: true, script: [CPU_LINE] });
    expect(cpu.before_script?.[0]).toBe("echo installed > installed.txt");
    // The job's runner tags are the GPU machines': the CPU job asks for none of them.
    expect(cpu.tags).toBeUndefined();
    expect((jobs[JOB] as Job).needs).toEqual([{ job: CPU_JOB, optional: true, artifacts: false }]);
    const mr = gitlabVariables(c.change, "merge_request");
    expect(jobsRun(jobs, mr)).toEqual([CPU_JOB, JOB]);
    expect(jobsRun(jobs, gitlabVariables(c.main1, "push"))).toEqual([JOB]);
    expect(jobsRun(jobs, gitlabVariables(c.main1, "schedule"))).toEqual([PREWARM]);

    // A merge request's pipeline: the CPU prewarm, then the job.
    for (const name of [CPU_JOB, JOB]) {
      const { text: shell, variables } = jobShell(jobs[name] as Job);
      const env = runnerEnv(c, c.change, { ...variables, ...mr, CI_JOB_NAME: name, ...installVariable(c) });
      const r = await runShell("bash", shell, { env, cwd: c.dir });
      expect(r.code, `${name}: ${r.stdout}\n${r.stderr}`).toBe(0);
      if (name === CPU_JOB) {
        expect(fs.readFileSync(path.join(c.dir, "installed.txt"), "utf8")).toBe("installed\n");
        expect(takeCalls(c)).toEqual([{ readOnly: "", args: CPU_LINE.replace(/^kcache /, "") }]);
        expect(r.stdout + r.stderr).toMatch(NO_PLAN);
      }
    }
    expect(runReport(c, `.kcache/${PROFILE}`)).toMatchObject({ scope: "pr/3", passed: true });
    expect((await storeKeys(c)).map((k) => k.scope)).toEqual(["pr/3"]);
  });
});

describe("kcache workflow --ci buildkite with github.cpu-prewarm", () => {
  it("runs the CPU prewarm step on pull requests only, soft-failing; the job's step depends on it, failure allowed", async () => {
    const c = checkout();
    const steps = buildkiteSteps(
      await writePipeline(c, "buildkite", `.buildkite/pipeline.kcache-${PROFILE}.yml`),
    );
    expect(steps.map((s) => s.key)).toEqual([CPU_JOB, JOB, PREWARM]);
    const cpu = steps[0] as Step;
    expect(cpu).toMatchObject({ soft_fail: true, command: ["echo installed > installed.txt"] });
    expect(cpu.agents).toBeUndefined();
    expect(steps[1]?.depends_on).toEqual([{ step: CPU_JOB, allow_failure: true }]);
    const pr = buildkiteVariables(c.change, "pull_request");
    expect(steps.filter((s) => stepRuns(s, pr)).map((s) => s.key)).toEqual([CPU_JOB, JOB]);
    // A push's build leaves the step out: Buildkite ignores a dependency on a step a condition left out.
    expect(steps.filter((s) => stepRuns(s, buildkiteVariables(c.main1, "push"))).map((s) => s.key)).toEqual([
      JOB,
    ]);

    // The plugin's hook: the step's command (the install line), then kcache prewarm --cpu.
    const [location, settings] = Object.entries(cpu.plugins[0] ?? {})[0] as [string, Record<string, unknown>];
    expect(settings).toEqual({ profile: PROFILE, cpu: true, workers: 2 });
    const env = runnerEnv(c, c.change, {
      ...pr,
      ...pluginEnv(location, settings),
      PATH: `${c.wrapper}:${process.env.PATH}`,
      BUILDKITE_COMMAND: (cpu.command ?? []).join("\n"),
      BUILDKITE_BUILD_CHECKOUT_PATH: c.dir,
    });
    const r = await runShell("sh", `exec sh "${PLUGIN_DIR}/hooks/command"\n`, { env, cwd: c.dir });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(fs.readFileSync(path.join(c.dir, "installed.txt"), "utf8")).toBe("installed\n");
    expect(takeCalls(c)).toEqual([
      { readOnly: "", args: "--version" },
      { readOnly: "", args: `prewarm --cpu --profile ${PROFILE} --workers 2` },
    ]);
    expect(r.stdout + r.stderr).toMatch(NO_PLAN);
  });
});

describe("kcache workflow --ci jenkins with github.cpu-prewarm", () => {
  it("runs the CPU prewarm stage on change requests only, on its own agent, before the job's stages on theirs; its failure is caught", async () => {
    const c = checkout();
    const yml = path.join(c.dir, "kcache.yml");
    fs.writeFileSync(
      yml,
      fs
        .readFileSync(yml, "utf8")
        .replace(
          "    github:\n",
          "    jenkins: { label: h100, cpu-prewarm: { label: linux } }\n    github:\n",
        ),
    );
    const text = await writePipeline(c, "jenkins", `Jenkinsfile.kcache-${PROFILE}`);
    expect(text).toContain(`// On change requests the stage ${PROFILE} CPU prewarm runs first`);
    const jf = readJenkinsfile(text);
    // No agent for the whole build: the GPU agent is not held while the CPU one compiles.
    expect(jf.agent).toBe("none");
    expect(jf.stages.map((s) => [s.name, s.agent, s.parent])).toEqual([
      [`${PROFILE} CPU prewarm`, "{ label 'linux' }", null],
      [PROFILE, "{ label 'h100' }", `${PROFILE} jobs`],
      [`${PROFILE} prewarm`, "{ label 'h100' }", `${PROFILE} jobs`],
    ]);
    const cpu = jf.stages[0];
    expect(cpu?.when).toEqual({ changeRequest: true });
    expect(cpu?.catchError).toBe(true);
    expect(jf.alwaysArchived).toBe(true);
    const runs = (kind: "branch" | "timer" | "change") =>
      jf.stages
        .filter((s) =>
          stageRuns(
            s.when,
            jenkinsVariables(c.main1, kind),
            kind === "timer" ? "TimerTrigger" : "BranchEventCause",
          ),
        )
        .map((s) => s.name);
    expect(runs("change")).toEqual([`${PROFILE} CPU prewarm`, PROFILE]);
    expect(runs("branch")).toEqual([PROFILE]);
    expect(runs("timer")).toEqual([`${PROFILE} prewarm`]);

    // A change request's build: the CPU prewarm's sh, then the job's.
    const vars = jenkinsVariables(c.change, "change");
    for (const stage of jf.stages.filter((s) => stageRuns(s.when, vars, "BranchEventCause"))) {
      const env = runnerEnv(c, c.change, { ...jf.environment, ...vars, ...installVariable(c) });
      for (const shell of stage.sh) {
        const r = await runShell("sh", shell, { env, cwd: c.dir });
        expect(r.code, `${stage.name}: ${r.stdout}\n${r.stderr}`).toBe(0);
        if (stage === cpu) {
          expect(fs.readFileSync(path.join(c.dir, "installed.txt"), "utf8")).toBe("installed\n");
          expect(takeCalls(c)).toEqual([{ readOnly: "", args: CPU_LINE.replace(/^kcache /, "") }]);
          expect(r.stdout + r.stderr).toMatch(NO_PLAN);
        }
      }
    }
    expect(runReport(c, `.kcache/${PROFILE}`)).toMatchObject({ scope: "pr/5", passed: true });
  });
});

describe("where another CI runs the CPU prewarm", () => {
  it("takes each system's own machines, and refuses them without github.cpu-prewarm", async () => {
    const c = ciCheckout({ local: path.join(tempDir("store"), "store") }, [...CPU_PREWARM]);
    const yml = path.join(c.dir, "kcache.yml");
    const base = fs.readFileSync(yml, "utf8");
    fs.writeFileSync(
      yml,
      base.replace(
        "    github:\n",
        "    gitlab: { tags: [h100], image: cuda:12, cpu-prewarm: { tags: [cpu] } }\n    buildkite: { agents: { queue: h100 }, cpu-prewarm: { agents: { queue: cpu } } }\n    github:\n",
      ),
    );
    const gitlab = gitlabJobs(await writePipeline(c, "gitlab", `.gitlab/kcache-${PROFILE}.yml`));
    // The job's image by default (a CUDA image runs without a GPU); the CPU runners' tags.
    expect(gitlab[CPU_JOB]).toMatchObject({ tags: ["cpu"], image: "cuda:12" });
    const steps = buildkiteSteps(
      await writePipeline(c, "buildkite", `.buildkite/pipeline.kcache-${PROFILE}.yml`),
    );
    expect(steps[0]?.agents).toEqual({ queue: "cpu" });
    expect(steps[1]?.agents).toEqual({ queue: "h100" });

    fs.writeFileSync(
      yml,
      base
        .replace(CPU_PREWARM.map((l) => `      ${l}\n`).join(""), "")
        .replace("    github:\n", "    gitlab: { cpu-prewarm: { tags: [cpu] } }\n    github:\n"),
    );
    await expect(writePipeline(c, "gitlab", `.gitlab/kcache-${PROFILE}.yml`)).rejects.toThrow(
      "profiles.bench.gitlab.cpu-prewarm: says where the CPU prewarm runs, and there is none: add github.cpu-prewarm (its install line), or remove gitlab.cpu-prewarm",
    );
  });
});
