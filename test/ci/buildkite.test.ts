import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { VERSION } from "../../src/version.js";
import {
  buildkiteSteps,
  buildkiteVariables,
  PLUGIN_DIR,
  pluginEnv,
  pluginName,
  type Step,
  stepRuns,
} from "../helpers/buildkite.js";
import {
  type CiCheckout,
  ciCheckout,
  fakeCurl,
  PROFILE,
  READ_ONLY_KNOWN,
  READER_KEY,
  RESULTS,
  runnerEnv,
  runReport,
  runShell,
  storeKeys,
  takeCalls,
  WRITE_KEY,
  writePipeline,
} from "../helpers/ci-build.js";
import { type S3Server, startS3rver } from "../helpers/s3rver.js";
import { tempDir } from "../helpers/sandbox.js";

/*
 * `kcache workflow --ci buildkite`'s steps and kcache's Buildkite plugin (buildkite-plugin/): the
 * steps a build's variables select, their plugin settings turned into the variables the agent
 * gives the hook, the sample agent environment hook deciding who gets the store's write key (from
 * a fake `buildkite-agent secret get`), and the plugin's command hook run by sh in a detached
 * checkout against a local store and an S3 one.
 */
const FILE = `.buildkite/pipeline.kcache-${PROFILE}.yml`;
const STEP = `kcache-${PROFILE}`;
const PREWARM = `kcache-${PROFILE}-prewarm`;
const PLUGIN = `https://github.com/kcache/kcache.git/buildkite-plugin#v${VERSION}`;

let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3rver("kcache-buildkite");
});
afterAll(async () => {
  await s3?.stop();
});

/** A fake buildkite-agent: `secret get` answers the store's key, and logs each name asked for. */
function fakeAgent(c: CiCheckout): { dir: string; log: string } {
  const dir = path.join(c.root, "fake-agent");
  const log = path.join(c.root, "secrets.log");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, "buildkite-agent"),
    `#!/bin/sh\n[ "$1 $2" = "secret get" ] || exit 1\necho "$3" >> "${log}"\necho ${WRITE_KEY.AWS_SECRET_ACCESS_KEY}\n`,
    { mode: 0o755 },
  );
  return { dir, log };
}

function secretsAsked(log: string): string[] {
  if (!fs.existsSync(log)) return [];
  const names = fs.readFileSync(log, "utf8").trim().split("\n");
  fs.rmSync(log);
  return names;
}

/** One build: the steps its variables select must be `expected`; its plugin's hook runs after the agent's environment hook. */
async function build(
  c: CiCheckout,
  steps: Step[],
  sha: string,
  kind: "push" | "schedule" | "pull_request",
  expected: string,
  agentEnv: Record<string, string>,
) {
  const vars = buildkiteVariables(sha, kind);
  const selected = steps.filter((s) => stepRuns(s, vars));
  expect(selected.map((s) => s.key)).toEqual([expected]);
  const step = selected[0] as Step;
  const [location, settings] = Object.entries(step.plugins[0] ?? {})[0] as [string, Record<string, unknown>];
  expect(location).toBe(PLUGIN);
  const env = runnerEnv(c, sha, {
    ...vars,
    ...pluginEnv(location, settings),
    BUILDKITE_COMMAND: (step.command ?? []).join("\n"),
    BUILDKITE_BUILD_CHECKOUT_PATH: c.dir,
    ...agentEnv,
  });
  const script = `. "${PLUGIN_DIR}/agent-hooks/environment"\nexec sh "${PLUGIN_DIR}/hooks/command"\n`;
  const r = await runShell("sh", script, { env, cwd: c.dir });
  expect(r.code, `${kind}: ${r.stdout}\n${r.stderr}`).toBe(0);
  for (const pattern of step.artifact_paths) {
    const where = path.join(c.dir, pattern.replace(/\/\*\*\/\*$/, ""));
    expect(fs.existsSync(where), pattern).toBe(true);
  }
  return { ...r, calls: takeCalls(c) };
}

function expectSaved(c: CiCheckout, scope: string, from?: string) {
  const report = runReport(c, `.kcache/${PROFILE}`);
  expect(report.scope).toBe(scope);
  expect(["saved", "nothing-new"]).toContain(report.save?.outcome);
  if (from) expect(report.restore?.matchedScope).toBe(from);
}

/** The settings a step gives the plugin, held to plugin.yml's schema (JSON Schema, as Buildkite validates it). */
function expectValidSettings(settings: Record<string, unknown>) {
  const plugin = parse(fs.readFileSync(path.join(PLUGIN_DIR, "plugin.yml"), "utf8")) as {
    name: string;
    configuration: {
      properties: Record<string, { type?: string; oneOf?: { type: string; enum?: string[] }[] }>;
      required: string[];
      additionalProperties: boolean;
    };
  };
  expect(plugin.name).toBe("kcache");
  const schema = plugin.configuration;
  expect(schema.additionalProperties).toBe(false);
  for (const r of schema.required) expect(settings).toHaveProperty(r);
  const typeOf = (v: unknown) => (Array.isArray(v) ? "array" : typeof v);
  for (const [k, v] of Object.entries(settings)) {
    const p = schema.properties[k];
    expect(p, `setting ${k}`).toBeDefined();
    const types = p?.oneOf ?? [p as { type: string; enum?: string[] }];
    expect(
      types.some((t) => t.type === typeOf(v) && (!t.enum || t.enum.includes(String(v)))),
      `${k}: ${v}`,
    ).toBe(true);
  }
}

describe("kcache workflow --ci buildkite", () => {
  it("writes steps to upload: the job through kcache's plugin, a scheduled prewarm, the report as artifacts", async () => {
    const c = ciCheckout({ s3 });
    const text = await writePipeline(c, "buildkite", FILE);
    expect(text).toMatch(/^# Generated by `kcache workflow --ci buildkite --profile bench` from kcache.yml/m);
    expect(text).toContain(`buildkite-agent pipeline upload ${FILE}`);
    expect(text).toContain('"0 0 * * 1,3,5" in Asia/Shanghai is "0 16 * * 0,2,4" in UTC');
    const steps = buildkiteSteps(text);
    expect(steps.map((s) => s.key)).toEqual([STEP, PREWARM]);
    const [job, prewarm] = steps as [Step, Step];
    expect(job.command).toEqual(["echo set up > setup.txt"]);
    expect(job.plugins).toEqual([{ [PLUGIN]: { profile: PROFILE, "read-only": "auto" } }]);
    expect(job.artifact_paths).toEqual([`.kcache/${PROFILE}/**/*`, RESULTS]);
    expect(prewarm.plugins).toEqual([
      { [PLUGIN]: { profile: PROFILE, "read-only": "auto", prewarm: true, "if-changed": ["src/**"] } },
    ]);
    for (const s of steps)
      expectValidSettings(Object.values(s.plugins[0] ?? {})[0] as Record<string, unknown>);
    // The plugin from kcache's repository's folder is named after the folder: the hook reads BUILDKITE_PLUGIN_NAME.
    expect(pluginName(PLUGIN)).toBe("BUILDKITE_PLUGIN");
    // A scheduled build of another branch runs nothing; a push of another branch runs the job.
    expect(
      steps.filter((s) => stepRuns(s, { BUILDKITE_SOURCE: "schedule", BUILDKITE_BRANCH: "dev" })),
    ).toEqual([]);
    // A command's own $ survives the upload's substitution.
    const dollar = ciCheckout({ local: path.join(tempDir("store"), "s") });
    fs.writeFileSync(
      path.join(dollar.dir, "kcache.yml"),
      fs.readFileSync(path.join(dollar.dir, "kcache.yml"), "utf8").replace("echo set up", "echo $HOME"),
    );
    const escaped = buildkiteSteps(await writePipeline(dollar, "buildkite", FILE));
    expect(escaped[0]?.command).toEqual(["echo $HOME > setup.txt"]);
    expect(escaped[0]?.plugins[0]?.[PLUGIN]).toEqual({ profile: PROFILE });
  });

  it("against a local store: a main build downloads kcache and saves into branch/main, a pull request into pr/7", async () => {
    const c = ciCheckout({ local: path.join(tempDir("store"), "store") });
    const steps = buildkiteSteps(await writePipeline(c, "buildkite", FILE));
    const agent = fakeAgent(c);
    const curl = fakeCurl(c);
    const agentPath = { PATH: `${agent.dir}:${curl.dir}:${process.env.PATH}` };
    const main = await build(c, steps, c.main1, "push", STEP, agentPath);
    expect(fs.readFileSync(curl.urls, "utf8").trim()).toBe(
      `https://github.com/kcache/kcache/releases/download/v${VERSION}/kcache-linux-x64`,
    );
    expect(main.calls.map((x) => x.args)).toEqual([
      "--version",
      `run --profile ${PROFILE} --out .kcache/${PROFILE}`,
    ]);
    expect(fs.readFileSync(path.join(c.dir, "setup.txt"), "utf8")).toBe("set up\n");
    expectSaved(c, "branch/main");
    await build(c, steps, c.change, "pull_request", STEP, agentPath);
    expectSaved(c, "pr/7", "branch/main");
    expect((await storeKeys(c)).map((k) => k.scope).sort()).toEqual(["branch/main", "pr/7"]);
  });

  it("against S3: the agent's hook gives the write key to main's builds only; a pull request restores only", async () => {
    const c = ciCheckout({ s3 });
    const steps = buildkiteSteps(await writePipeline(c, "buildkite", FILE));
    const agent = fakeAgent(c);
    const agentEnv = { PATH: `${c.wrapper}:${agent.dir}:${process.env.PATH}`, ...READER_KEY };
    const prewarm = await build(c, steps, c.main1, "schedule", PREWARM, agentEnv);
    expect(secretsAsked(agent.log)).toEqual(["kcache_aws_access_key_id", "kcache_aws_secret_access_key"]);
    expect(prewarm.calls.at(-1)).toEqual({
      readOnly: "",
      args: `prewarm --profile ${PROFILE} --out .kcache/${PROFILE}-prewarm --if-changed src/**`,
    });
    expect(prewarm.stdout + prewarm.stderr).toMatch(/prewarmed sim-bench-\S+ \(saved\)/);
    await build(c, steps, c.main2, "push", STEP, agentEnv);
    expectSaved(c, "branch/main", "branch/main");
    secretsAsked(agent.log);
    const pr = await build(c, steps, c.change, "pull_request", STEP, agentEnv);
    expect(secretsAsked(agent.log)).toEqual([]);
    expect(pr.calls.map((x) => x.readOnly)).toEqual(["", "1"]); // kcache --version, then the run
    expect(pr.stdout).toContain("restoring only (KCACHE_READ_ONLY=1)");
    expect(runReport(c, `.kcache/${PROFILE}`).restore?.matchedScope).toBe("branch/main");
    if (READ_ONLY_KNOWN) expect((await storeKeys(c)).map((k) => k.scope)).not.toContain("pr/7");
  });
});

describe("kcache's Buildkite plugin (buildkite-plugin/hooks/command)", () => {
  /** The hook alone, vendored as ./.buildkite/plugins/kcache, with a kcache that only logs its arguments. */
  async function hook(settings: Record<string, unknown>, env: Record<string, string> = {}) {
    const dir = tempDir("plugin");
    const log = path.join(dir, "kcache.log");
    const install = `mkdir -p bin && printf '#!/bin/sh\\necho "KCACHE_READ_ONLY=\${KCACHE_READ_ONLY:-} $*" >> ${log}\\n' > bin/kcache && chmod +x bin/kcache && PATH="$PWD/bin:$PATH"`;
    const vars = pluginEnv("./.buildkite/plugins/kcache", { install, ...settings });
    const r = await runShell("sh", `exec sh "${PLUGIN_DIR}/hooks/command"\n`, {
      env: { PATH: process.env.PATH, ...vars, ...env },
      cwd: dir,
    });
    const calls = fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [];
    return { ...r, calls };
  }

  it("passes its settings to kcache whatever the agent names it, and refuses what it cannot read", async () => {
    expect(pluginName("./.buildkite/plugins/kcache")).toBe("KCACHE");
    expect((await hook({ profile: "p", config: "ci/kcache.yml", out: "reports" })).calls).toEqual([
      "KCACHE_READ_ONLY= --version",
      "KCACHE_READ_ONLY= run --profile p --config ci/kcache.yml --out reports",
    ]);
    expect((await hook({ profile: "p", prewarm: true, "if-changed": ["a/**", "b c"] })).calls.at(-1)).toBe(
      "KCACHE_READ_ONLY= prewarm --profile p --out .kcache/p-prewarm --if-changed a/** b c",
    );
    expect((await hook({ profile: "p", prewarm: true, "if-changed": "a/**" })).calls.at(-1)).toBe(
      "KCACHE_READ_ONLY= prewarm --profile p --out .kcache/p-prewarm --if-changed a/**",
    );
    expect(
      (await hook({ profile: "p", "read-only": true }, { AWS_SECRET_ACCESS_KEY: "k" })).calls.at(-1),
    ).toBe("KCACHE_READ_ONLY=1 run --profile p --out .kcache/p");
    expect(
      (await hook({ profile: "p", "read-only": "auto" }, { AWS_SECRET_ACCESS_KEY: "k" })).calls.at(-1),
    ).toBe("KCACHE_READ_ONLY= run --profile p --out .kcache/p");
    const noProfile = await hook({});
    expect(noProfile.code).toBe(2);
    expect(noProfile.stderr).toContain("set profile:");
    const bad = await hook({ profile: "p", "read-only": "sometimes" });
    expect(bad.code).toBe(2);
    expect(bad.calls).toEqual(["KCACHE_READ_ONLY= --version"]);
    // The step's command runs first; when it fails, kcache does not run.
    const failing = await hook({ profile: "p" }, { BUILDKITE_COMMAND: "echo setup\nexit 4" });
    expect(failing.code).toBe(4);
    expect(failing.calls).toEqual(["KCACHE_READ_ONLY= --version"]);
  });

  it("downloads this release's kcache by default", () => {
    const text = fs.readFileSync(path.join(PLUGIN_DIR, "hooks/command"), "utf8");
    expect(text).toContain(`default_version=${VERSION}\n`);
  });
});
