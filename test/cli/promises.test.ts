import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { entryNames } from "../helpers/entry-compare.js";
import { runSandboxProfile } from "../helpers/profile.js";
import { project } from "../helpers/project.js";
import { sandbox } from "../helpers/sandbox.js";

/** A project saved once: 6 entries under prefix `trust`, revision f...f. */
async function saved() {
  const p = project();
  generateTritonCache(p.cache, { entries: 6, totalBytes: 120_000 });
  const s = await runCli(["save", "--json"], { env: p.env, cwd: p.dir });
  expect(s.code).toBe(0);
  return { p, key: (JSON.parse(s.stdout) as { primaryKey: string }).primaryKey };
}

describe("README promises of the CLI", () => {
  it("exit 4: the probed stack disagrees with stack.pins under --strict (a warning without)", async () => {
    const p = project();
    fs.appendFileSync(path.join(p.dir, "kcache.yml"), 'stack:\n  pins: {python: "0.0"}\n');
    const lenient = await runCli(["key"], { env: p.env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(/warning: .*stack\.pins disagree with this machine: python: pinned 0\.0/);
    const strict = await runCli(["restore", "--strict"], { env: p.env, cwd: p.dir });
    expect(strict.code).toBe(4);
  });

  it("exit 1: an internal error (a fault injected into the process) prints its stack and asks for a report", async () => {
    const p = project();
    // Injected at start-up: the first JSON result the command prints throws, as a bug would.
    const inject = `data:text/javascript,${encodeURIComponent("JSON.stringify=()=>{throw new TypeError('injected fault')}")}`;
    const r = await runCli(["key", "--json"], {
      env: { ...p.env, NODE_OPTIONS: `--import=${inject}` },
      cwd: p.dir,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/kcache: internal error \(please report\): TypeError: injected fault\n\s+at /);
  });

  it("--lookup-only finds the key and downloads nothing", async () => {
    const { p, key } = await saved();
    const elsewhere = path.join(p.dir, "other-runner");
    const r = await runCli(["restore", "--lookup-only", "--json"], {
      env: { ...p.env, CACHE_ROOT: elsewhere, KCACHE_STATE_DIR: path.join(p.dir, "s2") },
      cwd: p.dir,
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      matchedKey: key,
      cacheHit: true,
      lookupOnly: true,
      entriesRestored: 0,
    });
    expect(r.stderr).toMatch(
      new RegExp(
        `found ${key} in branch/main \\(exact\\) of local store \\S+ \\(lookup only, nothing downloaded\\)`,
      ),
    );
    expect(fs.existsSync(elsewhere)).toBe(false);
  });

  it("ls --prefix lists only that workload's keys; inspect --entries lists every entry; stack --json is the fingerprint", async () => {
    const { p, key } = await saved();
    fs.writeFileSync(
      path.join(p.dir, "other.yml"),
      fs.readFileSync(path.join(p.dir, "kcache.yml"), "utf8").replace("prefix: trust", "prefix: matrix"),
    );
    expect((await runCli(["save", "-c", "other.yml"], { env: p.env, cwd: p.dir })).code).toBe(0);
    const all = JSON.parse((await runCli(["ls", "--json"], { env: p.env, cwd: p.dir })).stdout) as {
      keys: { key: string }[];
    };
    expect(all.keys).toHaveLength(2);
    const only = JSON.parse(
      (await runCli(["ls", "--prefix", "trust-", "--json"], { env: p.env, cwd: p.dir })).stdout,
    ) as {
      keys: { key: string }[];
    };
    expect(only.keys.map((k) => k.key)).toEqual([key]);

    const inspect = await runCli(["inspect", key, "--entries"], { env: p.env, cwd: p.dir });
    expect(inspect.code).toBe(0);
    for (const e of fs.readdirSync(p.cache)) expect(inspect.stdout).toContain(e);

    const stack = JSON.parse((await runCli(["stack", "--json"], { env: p.env, cwd: p.dir })).stdout) as {
      stackId: string;
      components: Record<string, string>;
    };
    expect(stack.stackId).toMatch(/^[0-9a-f]{12}$/);
    expect(key).toContain(`-${stack.stackId}-`);
    expect(stack.components).toMatchObject({ os: "linux" });
  });

  it("ls and prune refuse a store that cannot list or delete (GitHub's cache), saying why", async () => {
    const p = project();
    fs.writeFileSync(
      path.join(p.dir, "kcache.yml"),
      "caches:\n  - {name: t, kind: triton, path: /tmp/kcache-gha-x}\nstore: {type: gha}\n",
    );
    const ls = await runCli(["ls"], { env: p.env, cwd: p.dir });
    expect(ls.code).toBe(2);
    expect(ls.stderr).toMatch(/kcache ls needs a store that can list its keys; GitHub Actions cache/);
    const prune = await runCli(["prune", "--keep", "1"], { env: p.env, cwd: p.dir });
    expect(prune.code).toBe(3);
    expect(prune.stderr).toMatch(/cannot list or delete objects, so kcache cannot prune it/);
  });

  it("prune --keep keeps the newest N per scope and prefix, and --older-than goes by the key's age", async () => {
    const p = project();
    generateTritonCache(p.cache, { entries: 3, totalBytes: 60_000 });
    const yml = fs.readFileSync(path.join(p.dir, "kcache.yml"), "utf8");
    fs.writeFileSync(path.join(p.dir, "b.yml"), yml.replace("prefix: trust", "prefix: other"));
    const scopes = { main: "refs/heads/main", dev: "refs/heads/dev" };
    let n = 0;
    for (const [, ref] of Object.entries(scopes))
      for (const cfg of ["kcache.yml", "b.yml"])
        for (let i = 0; i < 3; i++) {
          const sha = String(++n % 10).repeat(39) + String.fromCharCode(97 + n);
          // Each save has something new, so each writes its key.
          writeKernelEntry(p.cache, tritonKeyName(`prune-${n}`), `k${n}`, 2000, rng(n));
          const r = await runCli(["save", "-c", cfg], {
            env: {
              ...p.env,
              GITHUB_REF: ref,
              GITHUB_SHA: sha,
              KCACHE_STATE_DIR: path.join(p.dir, `st-${n}`),
            },
            cwd: p.dir,
          });
          expect(r.code).toBe(0);
          // Explicit ages: each key an hour older than the next, so however long this test takes (minutes
          // on a loaded machine), no key's age crosses the --older-than below.
          const m = path.join(
            p.store,
            "manifests",
            encodeURIComponent(ref.replace("refs/heads/", "branch/")),
          );
          const file = fs.readdirSync(m).find((f) => f.endsWith(sha)) as string;
          const when = new Date(Date.now() - (100 - n) * 3_600_000);
          fs.utimesSync(path.join(m, file), when, when);
        }
    const kept = await runCli(["prune", "--keep", "2", "--json"], { env: p.env, cwd: p.dir });
    const report = JSON.parse(kept.stdout) as {
      manifestsDeleted: { scope: string; key: string }[];
      manifestsKept: number;
    };
    expect(report.manifestsDeleted).toHaveLength(4);
    expect(report.manifestsKept).toBe(8);
    const groups = new Set(report.manifestsDeleted.map((d) => `${d.scope} ${d.key.split("-")[0]}`));
    expect(groups.size).toBe(4);

    const aged = await runCli(["prune", "--older-than", "5730m", "--json"], { env: p.env, cwd: p.dir });
    // Keys n = 1..12 are (100 - n) hours old; the survivors of --keep older than 95.5 hours are n = 2, 3 (main, trust).
    expect((JSON.parse(aged.stdout) as { manifestsDeleted: unknown[] }).manifestsDeleted).toHaveLength(2);
  });

  it("a dir cache with nested files saves and restores byte for byte at another path", async () => {
    const p = project();
    fs.writeFileSync(
      path.join(p.dir, "kcache.yml"),
      `caches:\n  - name: inductor\n    kind: dir\n    path: \${CACHE_ROOT}\n    env: TORCHINDUCTOR_CACHE_DIR\nstore:\n  path: ${p.store}\n`,
    );
    const files = { "fxgraph/ab/cd.pkl": "graph", "triton/0/x.cubin": "cubin", "top.txt": "t" };
    for (const [f, d] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(p.cache, f)), { recursive: true });
      fs.writeFileSync(path.join(p.cache, f), d);
    }
    expect((await runCli(["save"], { env: p.env, cwd: p.dir })).code).toBe(0);
    const other = path.join(p.dir, "elsewhere");
    const r = await runCli(["restore", "--json"], {
      env: { ...p.env, CACHE_ROOT: other, KCACHE_STATE_DIR: path.join(p.dir, "s2") },
      cwd: p.dir,
    });
    expect(JSON.parse(r.stdout)).toMatchObject({ entriesRestored: 3, entriesBad: 0 });
    for (const [f, d] of Object.entries(files)) expect(fs.readFileSync(path.join(other, f), "utf8")).toBe(d);
  });
});

describe("README promises of kcache run", () => {
  it("a cache's env: variable (not only TRITON_CACHE_DIR) points the commands at its path", async () => {
    const p = project();
    const inductor = path.join(p.dir, "inductor-cache");
    fs.writeFileSync(
      path.join(p.dir, "kcache.yml"),
      `caches:\n  - name: triton\n    kind: triton\n    path: \${CACHE_ROOT}\n  - {name: inductor, kind: dir, path: ${inductor}, env: TORCHINDUCTOR_CACHE_DIR}\nstore:\n  path: ${p.store}\nprofiles:\n  show:\n    commands:\n      - name: show\n        run: echo "$TORCHINDUCTOR_CACHE_DIR $TRITON_CACHE_DIR" > seen.txt\n`,
    );
    const r = await runCli(["run", "--profile", "show", "--out", path.join(p.dir, "out")], {
      env: p.env,
      cwd: p.dir,
    });
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(p.dir, "seen.txt"), "utf8").trim()).toBe(`${inductor} ${p.cache}`);
  });

  it("--no-restore starts cold, --no-save never saves, and save: never holds the save back", async () => {
    const sb = sandbox();
    generateTritonCache(path.join(sb.dir, "compiled"), { entries: 3, totalBytes: 60_000 });
    const compile = { name: "compile", run: "cp -R compiled/. triton/" };
    const first = await runSandboxProfile(sb, { commands: [compile] });
    expect(first.report.save?.outcome).toBe("saved");

    const cold = await runSandboxProfile(
      sb,
      { commands: [{ name: "noop", run: "true" }] },
      {
        restore: false,
        save: false,
        cachePath: path.join(sb.dir, "cold"),
        stateDir: path.join(sb.dir, "cold-state"),
      },
    );
    expect(cold.report.restore).toBeNull();
    expect(cold.report.save).toBeNull();
    expect(entryNames(path.join(sb.dir, "cold"))).toEqual([]);

    const never = await runSandboxProfile(
      sb,
      { save: "never", commands: [compile] },
      { env: { GITHUB_SHA: "2".repeat(40) }, stateDir: path.join(sb.dir, "never-state") },
    );
    expect(never.report.save).toBeNull();
    expect(never.report.saveSkipped).toMatch(/save: never/);
    const manifests = fs.readdirSync(path.join(sb.store, "manifests", "branch%2Fmain"));
    expect(manifests).toHaveLength(1);
  });
});
