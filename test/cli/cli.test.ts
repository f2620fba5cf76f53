import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";

/** The shared project helper, its keys prefixed "cli"; `yml` replaces the config. */
const cliProject = (yml?: string) => project({ yml, prefix: "cli" });

describe("kcache CLI", () => {
  it("saves, lists, inspects and restores with exit code 0", async () => {
    const p = cliProject();
    generateTritonCache(p.cache, { entries: 10, totalBytes: 400_000 });
    const save = await runCli(["save", "--json"], { env: p.env, cwd: p.dir });
    expect(save.code).toBe(0);
    const saved = JSON.parse(save.stdout) as { outcome: string; primaryKey: string; entries: number };
    expect(saved).toMatchObject({ outcome: "saved", entries: 10 });
    expect(saved.primaryKey).toMatch(/^cli-[0-9a-f]{12}-f{40}$/);

    const ls = await runCli(["ls", "--json"], { env: p.env, cwd: p.dir });
    const listed = JSON.parse(ls.stdout) as { keys: { key: string; entries: number; scope: string }[] };
    expect(listed.keys).toEqual([
      expect.objectContaining({ key: saved.primaryKey, entries: 10, scope: "branch/main" }),
    ]);

    const inspect = await runCli(["inspect", saved.primaryKey], { env: p.env, cwd: p.dir });
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toMatch(/revision\s+f{40}/);
    expect(inspect.stdout).toMatch(/triton \(triton\): 10 entries/);

    const elsewhere = path.join(p.dir, "runner-2");
    const restore = await runCli(["restore", "--json"], {
      env: { ...p.env, CACHE_ROOT: elsewhere, KCACHE_STATE_DIR: path.join(p.dir, "state-2") },
      cwd: p.dir,
    });
    expect(restore.code).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ cacheHit: true, entriesRestored: 10, entriesBad: 0 });
    expect(restore.stderr).toMatch(/restored 10 entries/);

    // A laptop without the CI job's $CACHE_ROOT: ls and inspect touch no cache folder and still work;
    // restore, which needs the folder, says which variable is missing (exit 2).
    const laptop = { ...p.env, CACHE_ROOT: undefined };
    const lsHere = await runCli(["ls", "--json"], { env: laptop, cwd: p.dir });
    expect(lsHere.code).toBe(0);
    expect(JSON.parse(lsHere.stdout).keys).toHaveLength(1);
    expect((await runCli(["inspect", saved.primaryKey], { env: laptop, cwd: p.dir })).code).toBe(0);
    const needs = await runCli(["restore"], { env: laptop, cwd: p.dir });
    expect(needs.code).toBe(2);
    expect(needs.stderr).toMatch(/caches\[0\]\.path: environment variable CACHE_ROOT is not set/);
  });

  it("names the file, the field and the fix for a bad config, and exits 2", async () => {
    const p = cliProject("caches:\n  - name: triton\n    kind: trition\n    path: /tmp/x\n");
    const r = await runCli(["restore"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(path.join(p.dir, "kcache.yml"));
    expect(r.stderr).toContain("caches[0].kind");
    expect(r.stderr).toMatch(/use one of "triton", "inductor", "dir"/);
  });

  it("--help, help and no command list every command; a command's --help its own options", async () => {
    const p = project();
    const commands = ["restore", "save", "stack", "key", "ls", "inspect", "prune", "trim", "run", "prewarm"];
    for (const args of [["--help"], ["help"], []]) {
      const r = await runCli(args, { env: p.env, cwd: p.dir });
      const listing = `${r.stdout}${r.stderr}`;
      for (const c of [...commands, "workflow", "compare", "stats", "diff"])
        expect(listing, `kcache ${args.join(" ")}`).toMatch(new RegExp(`^  ${c}\\b`, "m"));
    }
    const key = await runCli(["key", "--help"], { env: p.env, cwd: p.dir });
    expect(key.code).toBe(0);
    expect(key.stdout).toMatch(/Usage: kcache key \[options\]/);
    expect(key.stdout).toContain("--revision <rev>");
  });

  it("answers a mistyped command or option with the suggestion and a pointer to --help, not the whole help (exit 2)", async () => {
    const p = project();
    for (const args of [["restor"], ["restore", "--restore-keys", "x"]]) {
      const r = await runCli(args, { env: p.env, cwd: p.dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/Did you mean (restore|--restore-key)\?/);
      expect(r.stderr).toContain("kcache --help lists the commands");
      expect(r.stderr.trim().split("\n").length).toBeLessThanOrEqual(3);
    }
  });

  it("warns once when no torch or triton is installed (the step placed before the install step), and --strict exits 4", async () => {
    const p = cliProject();
    generateTritonCache(p.cache, { entries: 3, totalBytes: 30_000 });
    const bare = { ...p.env, PYTHONPATH: "" };
    for (const cmd of ["restore", "save"]) {
      const r = await runCli([cmd], { env: bare, cwd: p.dir });
      expect(r.code, r.stderr).toBe(0);
      const warnings = r.stderr.split("\n").filter((l) => /no torch or triton is installed/.test(l));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        /the key covers only Python and the platform .*put the kcache step after the step that installs them/,
      );
      const strict = await runCli([cmd, "--strict"], { env: bare, cwd: p.dir });
      expect(strict.code).toBe(4);
    }
    // Installed (dist-info on PYTHONPATH, as after pip install): no such warning, and torch and triton are keyed.
    const key = await runCli(["stack", "--json"], { env: p.env, cwd: p.dir });
    expect(key.stderr).not.toMatch(/no torch or triton/);
    expect(JSON.parse(key.stdout).components).toMatchObject({ torch: "2.11.0", triton: "3.6.0" });
  });

  it("says so when a save stops with its work unsettled (Node would exit 0 in silence): a warning, exit 3 under --strict", async () => {
    const p = cliProject();
    generateTritonCache(p.cache, { entries: 3, totalBytes: 30_000 });
    // A read that never settles and holds nothing open, as a stream that neither ends nor fails.
    const preload = path.join(p.dir, "never-settles.mjs");
    fs.writeFileSync(
      preload,
      'import fs from "node:fs"; fs.promises.readdir = () => new Promise(() => {});\n',
    );
    const env = { ...p.env, NODE_OPTIONS: `--import ${preload}` };
    const lenient = await runCli(["save"], { env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(
      /warning: kcache save stopped before it finished: .*nothing more was restored or saved/,
    );
    const strict = await runCli(["save", "--strict"], { env, cwd: p.dir });
    expect(strict.code).toBe(3);
    expect(strict.stderr).toMatch(/error: kcache save stopped before it finished/);
  });

  it("says that a bare prune deletes no key (no policy given)", async () => {
    const p = project();
    const r = await runCli(["prune"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/no policy given \(--keep, --older-than or --max-size\): no key is deleted/);
  });

  it("refuses a kcache.yml whose aliases expand without bound (a billion laughs) as a config error, exit 2", async () => {
    const levels = Array.from({ length: 6 }, (_, i) =>
      i === 0
        ? "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"
        : `a${i}: &a${i} [${Array(10)
            .fill(`*a${i - 1}`)
            .join(", ")}]`,
    );
    const p = cliProject(`${levels.join("\n")}\ncaches: []\n`);
    for (const cmd of ["key", "ls"]) {
      const r = await runCli([cmd], { env: p.env, cwd: p.dir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/kcache\.yml: invalid YAML: .*alias/i);
      expect(r.stderr).not.toMatch(/internal error/);
    }
  });

  it("reports YAML syntax errors with their line", async () => {
    const p = cliProject("caches:\n  - name: [unclosed\n");
    const r = await runCli(["save"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/kcache\.yml:\d+:\d+: invalid YAML/);
  });

  it("warns and exits 0 when the store fails, and exits 3 with --strict", async () => {
    const p = cliProject();
    generateTritonCache(p.cache, { entries: 3, totalBytes: 50_000 });
    fs.writeFileSync(path.join(p.dir, "store"), "a file where the store folder should be");
    const lenient = await runCli(["save"], { env: p.env, cwd: p.dir });
    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toMatch(/warning: save skipped: local store/);
    // The fault is coded in the JSON result: a store folder that is a file is the local disk's fault.
    const json = await runCli(["save", "--json"], { env: p.env, cwd: p.dir });
    expect(JSON.parse(json.stdout)).toMatchObject({
      outcome: "failed",
      faults: [{ code: "disk-failed", message: expect.stringMatching(/local store .*(ENOTDIR|EEXIST)/) }],
    });
    const strict = await runCli(["save", "--strict"], { env: p.env, cwd: p.dir });
    expect(strict.code).toBe(3);
    const restore = await runCli(["restore"], { env: p.env, cwd: p.dir });
    expect(restore.code).toBe(0);
  });

  it("exits 5 on a miss with --fail-on-cache-miss, and annotates warnings under GitHub Actions", async () => {
    const p = cliProject();
    const r = await runCli(["restore", "--fail-on-cache-miss"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/no saved key matched/);

    fs.writeFileSync(path.join(p.dir, "store"), "not a folder");
    const gha = await runCli(["restore"], { env: { ...p.env, GITHUB_ACTIONS: "true" }, cwd: p.dir });
    expect(gha.code).toBe(0);
    expect(gha.stderr).toMatch(/^::warning title=kcache::restore skipped/m);
  });

  it("prints the key, its scope and the restore order", async () => {
    const p = cliProject();
    const r = await runCli(["key", "--json"], { env: p.env, cwd: p.dir });
    const k = JSON.parse(r.stdout) as { key: string; writeScope: string; restoreOrder: unknown[] };
    expect(k.writeScope).toBe("branch/main");
    expect(k.key).toMatch(/^cli-[0-9a-f]{12}-f{40}$/);
    expect(k.restoreOrder).toHaveLength(2);
  });

  it("restore, save and key take --profile as run does: the profile's own key prefix", async () => {
    const p = cliProject();
    fs.appendFileSync(
      path.join(p.dir, "kcache.yml"),
      "profiles:\n  bench:\n    prefix: cli-bench\n    commands:\n      - name: noop\n        run: 'true'\n",
    );
    generateTritonCache(p.cache, { entries: 3, totalBytes: 30_000 });
    const key = async (...flags: string[]) =>
      (
        JSON.parse((await runCli(["key", "--json", ...flags], { env: p.env, cwd: p.dir })).stdout) as {
          key: string;
        }
      ).key;
    expect(await key()).toMatch(/^cli-[0-9a-f]{12}-f{40}$/);
    expect(await key("--profile", "bench")).toMatch(/^cli-bench-[0-9a-f]{12}-f{40}$/);
    const saved = await runCli(["save", "-p", "bench", "--json"], { env: p.env, cwd: p.dir });
    expect(JSON.parse(saved.stdout)).toMatchObject({
      outcome: "saved",
      primaryKey: await key("-p", "bench"),
    });
    const env = {
      ...p.env,
      CACHE_ROOT: path.join(p.dir, "elsewhere"),
      KCACHE_STATE_DIR: path.join(p.dir, "s2"),
    };
    const plain = await runCli(["restore", "--json"], { env, cwd: p.dir });
    expect(JSON.parse(plain.stdout)).toMatchObject({ cacheHit: false, entriesRestored: 0 });
    const profiled = await runCli(["restore", "--profile", "bench", "--json"], { env, cwd: p.dir });
    expect(JSON.parse(profiled.stdout)).toMatchObject({ cacheHit: true, entriesRestored: 3 });
  });

  it("-v says the keys looked up and each pack's size and time; -q says nothing but warnings", async () => {
    const p = cliProject();
    generateTritonCache(p.cache, { entries: 4, totalBytes: 40_000 });
    const saved = await runCli(["save", "-v"], { env: p.env, cwd: p.dir });
    expect(saved.code).toBe(0);
    expect(saved.stderr).toMatch(/kcache: pack packs\/\S+: 4 entries, .+ in .+, written in \d+\.\d\d s/);
    const env = {
      ...p.env,
      CACHE_ROOT: path.join(p.dir, "elsewhere"),
      KCACHE_STATE_DIR: path.join(p.dir, "s2"),
    };
    const restored = await runCli(["restore", "--verbose"], { env, cwd: p.dir });
    expect(restored.stderr).toMatch(/kcache: looking up key cli-[0-9a-f]{12}-f{40} in branch\/main: found/);
    // An exact key the store lacks is "none", never "1 found".
    const other = await runCli(["restore", "--verbose", "--revision", "e".repeat(40)], {
      env: { ...env, KCACHE_STATE_DIR: path.join(p.dir, "s5") },
      cwd: p.dir,
    });
    expect(other.stderr).toMatch(/looking up key cli-[0-9a-f]{12}-e{40} in branch\/main: none/);
    expect(other.stderr).not.toMatch(/e{40} in branch\/main: 1 found/);
    expect(other.stderr).toMatch(/looking up prefix cli-[0-9a-f]{12}- in branch\/main: 1 found/);
    expect(restored.stderr).toMatch(/kcache: pack packs\/\S+: .+, 4 of 4 entries written in \d+\.\d\d s/);
    const quiet = await runCli(["restore", "-q", "--json"], {
      env: { ...env, CACHE_ROOT: path.join(p.dir, "third"), KCACHE_STATE_DIR: path.join(p.dir, "s3") },
      cwd: p.dir,
    });
    expect(quiet.code).toBe(0);
    expect(JSON.parse(quiet.stdout)).toMatchObject({ entriesRestored: 4 });
    expect(quiet.stderr).toBe("");
    const plain = await runCli(["restore"], {
      env: { ...env, CACHE_ROOT: path.join(p.dir, "fourth"), KCACHE_STATE_DIR: path.join(p.dir, "s4") },
      cwd: p.dir,
    });
    expect(plain.stderr).toMatch(/restored 4 entries/);
    expect(plain.stderr).not.toMatch(/looking up|kcache: pack /);
  });

  it("prints usage errors with exit code 2", async () => {
    const p = cliProject();
    const r = await runCli(["prune", "--older-than", "soon"], { env: p.env, cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--older-than soon: use a number and a unit/);
    const unknown = await runCli(["sav"], { env: p.env, cwd: p.dir });
    expect(unknown.code).toBe(2);
  });
});
