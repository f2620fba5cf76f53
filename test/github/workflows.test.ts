import fs from "node:fs";
import path from "node:path";
import { NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig, resolveConfig } from "../../src/config/load.js";
import { isTimeZone } from "../../src/config/time-zone.js";
import { generateWorkflows, NO_FORK_PRS, selfHosted } from "../../src/github/workflows.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const EXAMPLE_DIR = path.resolve(import.meta.dirname, "../../examples/fla-kda");
const config = loadConfig({ file: path.join(EXAMPLE_DIR, "kcache.yml"), env: { HOME: "/home/ci" } });
const OPTS = { configPath: "kcache.yml", seed: "fla-org/flash-linear-attention" };

/** Loading a kcache.yml whose prewarm cron is `cron`, as a function that throws the config error. */
function resolveProfileCron(cron: string) {
  return () =>
    resolveConfig(
      {
        caches: [{ name: "t", kind: "triton", path: "/tmp/t" }],
        profiles: {
          p: {
            commands: [{ name: "c", run: "true" }],
            github: { prewarm: { cron, timezone: "Asia/Shanghai" } },
          },
        },
      },
      "/repo/kcache.yml",
      {},
      "/repo",
    );
}

/** GitHub's own parser: errors it reports for a workflow file. */
function parserErrors(name: string, content: string): string[] {
  const result = parseWorkflow({ name, content }, new NoOperationTraceWriter());
  return result.context.errors.getErrors().map((e) => e.message);
}

describe("generated workflows", () => {
  const all = ["kda-bench", "kda-tests"].flatMap((p) => generateWorkflows(config, p, OPTS));

  it("parse without error in GitHub's workflow parser", () => {
    expect(all.map((w) => w.file).sort()).toEqual([
      "kcache-kda-bench-prewarm.yml",
      "kcache-kda-bench.yml",
      "kcache-kda-tests.yml",
    ]);
    for (const w of all) expect(parserErrors(w.file, w.text)).toEqual([]);
    // The parser does catch what is wrong.
    expect(
      parserErrors(
        "bad.yml",
        "on: push\njobs:\n  x:\n    runs-on: linux\n    steps:\n      - uses: a/b@v1\n        run: echo\n",
      ),
    ).not.toEqual([]);
  });

  it("schedule the prewarm on Monday, Wednesday and Friday at midnight in Shanghai, on kernel pushes, and by hand", () => {
    const prewarm = parse(all.find((w) => w.file === "kcache-kda-bench-prewarm.yml")?.text ?? "") as {
      on: {
        schedule: { cron: string; timezone: string }[];
        push: { branches: string[]; paths: string[] };
        workflow_dispatch: null;
      };
      jobs: { prewarm: { steps: { uses?: string; with?: Record<string, unknown> }[] } };
    };
    expect(prewarm.on.schedule).toEqual([{ cron: "0 0 * * 1,3,5", timezone: "Asia/Shanghai" }]);
    expect(isTimeZone(prewarm.on.schedule[0]?.timezone ?? "")).toBe(true);
    expect(prewarm.on.push.branches).toEqual(["main"]);
    expect(prewarm.on.push.paths).toContain("fla/**");
    expect(prewarm.on).toHaveProperty("workflow_dispatch");
    const step = prewarm.jobs.prewarm.steps.at(-1);
    expect(step).toMatchObject({ uses: "kcache/kcache@v0", with: { mode: "prewarm", profile: "kda-bench" } });
    expect(String(step?.with?.["if-changed"]).split("\n")).toContain("benchmarks/**");
    // --if-changed needs the history: the checkout fetches it.
    expect(prewarm.jobs.prewarm.steps[0]).toEqual({
      uses: "actions/checkout@v7",
      with: { "fetch-depth": 0 },
    });
  });

  it("run the prewarm on its schedule, by hand and on pushes touching its paths, never on every push; its check reads once", () => {
    const prewarmOf = (paths?: string[]) => {
      const yml = resolveConfig(
        {
          caches: [{ name: "t", kind: "triton", path: "/tmp/t" }],
          profiles: {
            bench: {
              commands: [{ name: "c", run: "true" }],
              github: { prewarm: { cron: "0 3 * * *", ...(paths ? { paths } : {}) } },
            },
          },
        },
        "/repo/kcache.yml",
        {},
        "/repo",
      );
      const w = generateWorkflows(yml, "bench", OPTS).find((f) => f.file === "kcache-bench-prewarm.yml");
      expect(parserErrors(w?.file ?? "", w?.text ?? "")).toEqual([]);
      return parse(w?.text ?? "") as {
        name: string;
        on: Record<string, unknown>;
        jobs: Record<string, { name?: string }>;
      };
    };
    const unwatched = prewarmOf();
    expect(Object.keys(unwatched.on)).toEqual(["schedule", "workflow_dispatch"]);
    expect(prewarmOf(["fla/**"]).on.push).toEqual({ branches: ["main"], paths: ["fla/**"] });
    // GitHub names a job's check "<workflow> / <job>": no word of it twice.
    for (const [id, job] of Object.entries(unwatched.jobs)) {
      const words = `${unwatched.name} / ${job.name ?? id}`.split(/\W+/).filter(Boolean);
      expect(words.length, words.join(" ")).toBe(new Set(words).size);
    }
  });

  it("save the test job's cache under its own prefix only after its pytest step, in the CANN container, set_env.sh sourced", () => {
    const tests = parse(all.find((w) => w.file === "kcache-kda-tests.yml")?.text ?? "") as {
      jobs: {
        "kda-tests": {
          "runs-on": string;
          container: { image: string };
          env: Record<string, string>;
          steps: { name?: string; uses?: string; run?: string; shell?: string; with?: { mode?: string } }[];
        };
      };
    };
    const job = tests.jobs["kda-tests"];
    const steps = job.steps;
    expect(steps.map((s) => s.with?.mode ?? s.name ?? s.uses)).toEqual([
      "actions/checkout@v7",
      "Set up (1)",
      "Set up (2)",
      "restore",
      "pytest-8-cards",
      "save",
      "Upload the results",
    ]);
    // The save runs only after every step before it passed; the upload runs whatever happened.
    expect(steps.at(-2)).not.toHaveProperty("if");
    expect(steps.at(-1)).toMatchObject({ if: "always()", uses: "actions/upload-artifact@v4" });
    expect(job["runs-on"]).toBe("linux-aarch64-a2-8");
    expect(job.container.image).toBe("ascendai/cann:9.0.0-910b-ubuntu22.04-py3.11");
    expect(job.env).toEqual({ FLA_CI_ENV: "1", ASCEND_RT_VISIBLE_DEVICES: "0,1,2,3,4,5,6,7" });
    const pytest = steps.filter((x) => x.name?.startsWith("pytest"));
    expect(pytest).toHaveLength(1);
    for (const s of pytest as { shell?: string; run?: string; env?: Record<string, string> }[]) {
      expect(s.shell).toBe("bash");
      expect(s.run?.split("\n")[0]).toBe("source /usr/local/Ascend/ascend-toolkit/set_env.sh");
      expect(s.run).toContain("pytest -s -v --exitfirst -n 8 --dist load tests/modules tests/ops/utils");
      expect(s.env).toEqual({ FLA_NPU_XDIST: "1" });
    }
    expect(config.profiles["kda-tests"]?.prefix).toBe("fla-ascend-tests");
  });

  it("with style: steps, run each command as kcache run would: in the profile's workdir, sources quoted, ${{ }} left as text", () => {
    const cfg = resolveConfig(
      {
        caches: [{ name: "t", kind: "triton", path: "/tmp/t" }],
        store: { type: "s3", bucket: "bkt" },
        profiles: {
          s: {
            workdir: "sub",
            source: ["my env/set.sh", "/opt/tool env.sh"],
            env: { LIT: "${{ github.token }}" },
            commands: [
              { name: "c", run: "echo lit=$LIT; echo '${{ github.event.pull_request.title }}'" },
              { name: "d", run: "true", workdir: "deeper", env: { X: "a${{ secrets.K }}b" } },
            ],
            github: { style: "steps" },
          },
        },
      },
      "/repo/kcache.yml",
      {},
      "/repo",
    );
    const [w] = generateWorkflows(cfg, "s", OPTS);
    expect(parserErrors(w?.file ?? "", w?.text ?? "")).toEqual([]);
    const job = (
      parse(w?.text ?? "") as {
        jobs: Record<string, { env: Record<string, string>; steps: Record<string, unknown>[] }>;
      }
    ).jobs.s;
    const step = (name: string) => job?.steps.find((x) => x.name === name) as Record<string, unknown>;
    expect(job?.env).toEqual({ LIT: "${{ '${{' }} github.token }}" });
    expect(step("c")).toMatchObject({
      shell: "bash",
      "working-directory": "sub",
      run: "source 'my env/set.sh'\nsource '/opt/tool env.sh'\necho lit=$LIT; echo '${{ '${{' }} github.event.pull_request.title }}'",
    });
    // A command's workdir below the profile's; the profile's sources found from there.
    expect(step("d")).toMatchObject({
      "working-directory": "sub/deeper",
      run: "source '../my env/set.sh'\nsource '/opt/tool env.sh'\ntrue",
      env: { X: "a${{ '${{' }} secrets.K }}b" },
    });
  });

  it("ask for read access to the contents and the Actions cache only, and keep pull requests from forks off self-hosted runners", () => {
    // actions: read lets `kcache stats` and `kcache prune` list GitHub's cache entries.
    for (const w of all)
      expect((parse(w.text) as { permissions: unknown }).permissions).toEqual({
        contents: "read",
        actions: "read",
      });
    const jobOf = (file: string) =>
      Object.values(
        (parse(all.find((w) => w.file === file)?.text ?? "") as { jobs: Record<string, { if?: string }> })
          .jobs,
      )[0];
    // linux-aarch64-a2-8 is no GitHub-hosted label: the job runs on the project's own NPU machines.
    expect(jobOf("kcache-kda-bench.yml")?.if).toBe(NO_FORK_PRS);
    expect(jobOf("kcache-kda-tests.yml")?.if).toBe(NO_FORK_PRS);
    // The prewarm never runs on pull requests at all.
    expect(jobOf("kcache-kda-bench-prewarm.yml")?.if).toBeUndefined();
    type Profile = NonNullable<(typeof config.profiles)[string]>;
    const bench = config.profiles["kda-bench"] as Profile;
    const withGithub = (github: Partial<NonNullable<Profile["github"]>>): typeof config => ({
      ...config,
      profiles: {
        p: {
          ...bench,
          github: { ...(bench.github as NonNullable<Profile["github"]>), prewarm: undefined, ...github },
        },
      },
    });
    const optedIn = generateWorkflows(withGithub({ "fork-pull-requests": true }), "p", OPTS);
    expect(
      Object.values((parse(optedIn[0]?.text ?? "") as { jobs: Record<string, { if?: string }> }).jobs)[0]?.if,
    ).toBeUndefined();
    const hosted = generateWorkflows(withGithub({ "runs-on": "ubuntu-24.04" }), "p", OPTS);
    expect(
      Object.values((parse(hosted[0]?.text ?? "") as { jobs: Record<string, { if?: string }> }).jobs)[0]?.if,
    ).toBeUndefined();
    expect(selfHosted(["self-hosted", "linux", "h200"])).toBe(true);
    expect(selfHosted("ubuntu-latest")).toBe(false);
  });

  it("are the files committed in examples/fla-kda/workflows", () => {
    for (const w of all)
      expect(fs.readFileSync(path.join(EXAMPLE_DIR, "workflows", w.file), "utf8")).toBe(w.text);
  });

  it("are committable: paths filters, a timeout, one concurrency group per ref shared with the prewarm, results kept as an artifact", () => {
    type Profile = NonNullable<(typeof config.profiles)[string]>;
    const bench = config.profiles["kda-bench"] as Profile;
    const gh = bench.github as NonNullable<Profile["github"]>;
    const withPaths = {
      ...config,
      profiles: {
        "kda-bench": {
          ...bench,
          github: { ...gh, paths: ["fla/ops/**", "benchmarks/**"], "timeout-minutes": undefined },
        },
      },
    };
    const [main, prewarm] = generateWorkflows(withPaths, "kda-bench", OPTS).map(
      (w) =>
        parse(w.text) as {
          on: Record<string, { paths?: string[]; branches?: string[] } | null>;
          concurrency: { group: string; "cancel-in-progress": unknown };
          jobs: Record<
            string,
            { "timeout-minutes": number; steps: { if?: string; with?: { path?: string } }[] }
          >;
        },
    );
    expect(main?.on.pull_request?.paths).toEqual(["fla/ops/**", "benchmarks/**"]);
    expect(main?.on.push).toEqual({ branches: ["main"], paths: ["fla/ops/**", "benchmarks/**"] });
    expect(Object.values(main?.jobs ?? {})[0]?.["timeout-minutes"]).toBe(90);
    // A pull request's newer push cancels its older run; the default branch's runs are never cancelled
    // and share their group with the prewarm, which queues behind them instead of racing them.
    expect(main?.concurrency).toEqual({
      group: "kcache-kda-bench-${{ github.ref }}",
      "cancel-in-progress": "${{ github.event_name == 'pull_request' }}",
    });
    expect(prewarm?.concurrency).toEqual({
      group: "kcache-kda-bench-refs/heads/main",
      "cancel-in-progress": false,
    });
    const upload = Object.values(main?.jobs ?? {})[0]?.steps.at(-1);
    expect(upload?.if).toBe("always()");
    expect(upload?.with?.path?.split("\n")).toEqual([
      "${{ runner.temp }}/kcache/kda-bench",
      ...bench.checks.map((c) => ("file" in c ? c.file : "")).filter((f, i, a) => f && a.indexOf(f) === i),
    ]);
  });

  it("name the command that wrote them in their header, and --check keeps to it (a --utc file stays --utc)", async () => {
    const dir = tempDir("wf-utc");
    fs.copyFileSync(path.join(EXAMPLE_DIR, "kcache.yml"), path.join(dir, "kcache.yml"));
    const env = { PATH: process.env.PATH, HOME: dir };
    const args = ["workflow", "-p", "kda-bench", "--out", "wf"];
    expect((await runCli([...args, "--utc", "--jitter", "--seed", "my/repo"], { env, cwd: dir })).code).toBe(
      0,
    );
    const text = fs.readFileSync(path.join(dir, "wf", "kcache-kda-bench-prewarm.yml"), "utf8");
    expect(text).toContain(
      "# Generated by `kcache workflow --profile kda-bench --utc --jitter --seed my/repo` from kcache.yml",
    );
    expect(text).not.toContain("timezone:");
    // Checked without the flags: compared as written, so current.
    expect((await runCli([...args, "--check"], { env, cwd: dir })).code).toBe(0);
    fs.appendFileSync(path.join(dir, "wf", "kcache-kda-bench-prewarm.yml"), "# edited\n");
    const stale = await runCli([...args, "--check"], { env, cwd: dir });
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain(
      "regenerate: kcache workflow --profile kda-bench --utc --jitter --seed my/repo --out wf",
    );
  });

  it("write an exact UTC cron with --utc, and refuse one for a zone with daylight saving", () => {
    const utc = generateWorkflows(config, "kda-bench", {
      ...OPTS,
      utc: true,
      now: new Date("2027-01-01T00:00:00Z"),
    });
    const prewarm = parse(utc[1]?.text ?? "") as { on: { schedule: Record<string, string>[] } };
    expect(prewarm.on.schedule).toEqual([{ cron: "0 16 * * 0,2,4" }]);
    expect(utc[1]?.text).toContain("# 0 0 * * 1,3,5 in Asia/Shanghai is 0 16 * * 0,2,4 in UTC all year.");
    const berlin = {
      ...config,
      profiles: {
        p: {
          ...(config.profiles["kda-bench"] as NonNullable<(typeof config.profiles)[string]>),
          github: {
            ...config.profiles["kda-bench"]?.github,
            "runs-on": "x",
            setup: [],
            on: ["push" as const],
            style: "run" as const,
            "fork-pull-requests": false,
            paths: [],
            prewarm: { cron: "0 0 * * *", timezone: "Europe/Berlin", paths: [] },
          },
        },
      },
    };
    expect(() => generateWorkflows(berlin, "p", { ...OPTS, utc: true })).toThrow(
      /Europe\/Berlin changes its UTC offset/,
    );
    // Half past midnight and midnight in Kolkata are two UTC lines: two schedule entries, exact.
    const kolkata = {
      ...berlin,
      profiles: {
        p: {
          ...berlin.profiles.p,
          github: {
            ...berlin.profiles.p.github,
            prewarm: { cron: "0,30 0 * * *", timezone: "Asia/Kolkata", paths: [] },
          },
        },
      },
    };
    const two = generateWorkflows(kolkata, "p", {
      ...OPTS,
      utc: true,
      now: new Date("2027-01-01T00:00:00Z"),
    });
    const kp = parse(two[1]?.text ?? "") as { on: { schedule: Record<string, string>[] } };
    expect(kp.on.schedule).toEqual([{ cron: "0 19 * * *" }, { cron: "30 18 * * *" }]);
    expect(parserErrors("k.yml", two[1]?.text ?? "")).toEqual([]);
  });

  it("refuses a time zone in another case than the database's (Node takes it, Jenkins's Java falls back to GMT), naming the spelling", () => {
    const load = (timezone: string) => () =>
      resolveConfig(
        {
          caches: [{ name: "t", kind: "triton", path: "/tmp/t" }],
          profiles: {
            p: {
              commands: [{ name: "c", run: "true" }],
              github: { prewarm: { cron: "0 0 * * 1", timezone } },
            },
          },
        },
        "/repo/kcache.yml",
        {},
        "/repo",
      );
    expect(load("asia/shanghai")).toThrow(
      /"asia\/shanghai" is spelt in another case .*: write "Asia\/Shanghai"/,
    );
    expect(load("us/eastern")).toThrow(/write "America\/New_York"/);
    for (const ok of ["Asia/Shanghai", "US/Eastern", "Etc/GMT+5", "UTC"]) expect(load(ok)).not.toThrow();
    expect(isTimeZone("asia/shanghai")).toBe(false);
  });

  it("refuses a cron GitHub would not accept, naming the field", () => {
    const bad = resolveProfileCron("61 0 * * 1");
    expect(bad).toThrow(/prewarm\.cron: "61 0 \* \* 1": minute field "61": 61 is out of range \(0-59\)/);
  });

  it("move the schedule off minute 0 with --jitter, the same way each time", () => {
    const a = generateWorkflows(config, "kda-bench", { ...OPTS, jitter: true });
    const b = generateWorkflows(config, "kda-bench", { ...OPTS, jitter: true });
    expect(a[1]?.text).toBe(b[1]?.text);
    const cron = (parse(a[1]?.text ?? "") as { on: { schedule: { cron: string }[] } }).on.schedule[0]?.cron;
    expect(cron).toMatch(/^([7-9]|[1-4]\d|5[0-3]) 0 \* \* 1,3,5$/);
  });

  it("kcache workflow --check fails when the files are stale", async () => {
    const dir = tempDir("wf");
    fs.copyFileSync(path.join(EXAMPLE_DIR, "kcache.yml"), path.join(dir, "kcache.yml"));
    const env = { PATH: process.env.PATH, HOME: dir };
    expect(
      (await runCli(["workflow", "-p", "kda-bench", "--out", "wf", "--seed", "s"], { env, cwd: dir })).code,
    ).toBe(0);
    expect(
      (
        await runCli(["workflow", "-p", "kda-bench", "--out", "wf", "--seed", "s", "--check"], {
          env,
          cwd: dir,
        })
      ).code,
    ).toBe(0);
    fs.appendFileSync(path.join(dir, "wf", "kcache-kda-bench.yml"), "# edited\n");
    const stale = await runCli(["workflow", "-p", "kda-bench", "--out", "wf", "--seed", "s", "--check"], {
      env,
      cwd: dir,
    });
    expect(stale.code).toBe(2);
    expect(stale.stderr).toMatch(/out of date with kcache\.yml: wf\/kcache-kda-bench\.yml/);
    // A seed the header could not hold as written is refused before anything is written (exit 2).
    const odd = await runCli(["workflow", "-p", "kda-bench", "--out", "wf2", "--jitter", "--seed", "a`b"], {
      env,
      cwd: dir,
    });
    expect(odd.code).toBe(2);
    expect(odd.stderr).toMatch(/--seed "a`b": give letters, digits and/);
    expect(fs.existsSync(path.join(dir, "wf2"))).toBe(false);
  });

  it("kcache workflow --json says what it did to each file, and --step --json gives the steps", async () => {
    const dir = tempDir("wf-json");
    fs.copyFileSync(path.join(EXAMPLE_DIR, "kcache.yml"), path.join(dir, "kcache.yml"));
    const env = { PATH: process.env.PATH, HOME: dir };
    const args = ["workflow", "-p", "kda-bench", "--out", "wf", "--seed", "s", "--json"];
    const first = JSON.parse((await runCli(args, { env, cwd: dir })).stdout) as {
      files: { profile: string; file: string; status: string }[];
    };
    expect(first.files.length).toBeGreaterThan(0);
    expect(first.files.every((f) => f.profile === "kda-bench" && f.status === "wrote")).toBe(true);
    for (const f of first.files) expect(fs.existsSync(path.join(dir, f.file))).toBe(true);
    fs.appendFileSync(path.join(dir, first.files[0]?.file ?? ""), "# edited\n");
    const check = await runCli([...args, "--check"], { env, cwd: dir });
    expect(check.code).toBe(2);
    const statuses = (JSON.parse(check.stdout) as { files: { status: string }[] }).files.map((f) => f.status);
    expect(statuses).toEqual(["stale", ...first.files.slice(1).map(() => "current")]);
    const step = JSON.parse((await runCli([...args, "--step"], { env, cwd: dir })).stdout) as {
      steps: { profile: string; step: string }[];
    };
    expect(step.steps).toHaveLength(1);
    expect(step.steps[0]?.step).toMatch(/kcache/);
  });
});
