import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, profileConfig, resolveConfig } from "../../src/config/load.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/sandbox.js";

const env = { HOME: "/home/ci", RUNNER_TEMP: "/runner/_temp" };

/** The lines of the error loading the kcache.yml in `dir` gives (none where it loads). */
function loadErrors(dir: string): string[] {
  try {
    loadConfig({ cwd: dir, env: {} });
    return [];
  } catch (e) {
    return (e as Error).message.split("\n");
  }
}

describe("kcache.yml", () => {
  it("expands ${VAR}, ${VAR:-default} and ~ in paths, and fills defaults", () => {
    const c = resolveConfig(
      {
        caches: [
          { name: "triton", kind: "triton", path: "${TRITON_CACHE_DIR:-~/.triton/cache}" },
          { name: "inductor", kind: "dir", path: "${RUNNER_TEMP}/inductor", env: "TORCHINDUCTOR_CACHE_DIR" },
        ],
      },
      "kcache.yml",
      env,
      "/repo",
    );
    // A persistent runner's settings default to what an ephemeral runner needs: none.
    const plain = { trustLocal: false, isolate: false, maxSize: null, lazy: false };
    expect(c.caches).toEqual([
      { name: "triton", kind: "triton", path: "/home/ci/.triton/cache", env: "TRITON_CACHE_DIR", ...plain },
      {
        name: "inductor",
        kind: "dir",
        path: "/runner/_temp/inductor",
        env: "TORCHINDUCTOR_CACHE_DIR",
        ...plain,
      },
    ]);
    expect(c.store).toEqual({ type: "local", path: "/home/ci/.cache/kcache" });
    expect(c.key).toEqual({ prefix: "kcache", restorePrefixes: [], defaultBranch: undefined });
    expect(c.save).toMatchObject({ maxChain: 8, maxDeadShare: 0.5, compressionLevel: 3 });
  });

  it("puts the store at $KCACHE_STORE when the file names none", () => {
    const c = resolveConfig(
      { caches: [{ name: "t", kind: "dir", path: "x" }] },
      "k.yml",
      { ...env, KCACHE_STORE: "/srv/kc" },
      "/repo",
    );
    expect(c.store).toEqual({ type: "local", path: "/srv/kc" });
    expect(c.caches[0]?.path).toBe("/repo/x");
  });

  it.each([
    [{ caches: [] }, /k\.yml: caches: list at least one cache, each with name, kind and path/],
    [{ caches: [{ name: "t", kind: "triton" }] }, /k\.yml: caches\[0\]\.path: .*expected string/],
    [
      { caches: [{ name: "t", kind: "triton", path: "/x", size: 3 }] },
      /caches\[0\]: .*remove "size" or check its spelling/,
    ],
    [
      { caches: [{ name: "t", kind: "triton", path: "/x" }], key: { prefix: "a,b" } },
      /key\.prefix: must not contain a comma \(GitHub cache keys cannot\): use - or _ instead/,
    ],
    [
      {
        caches: [
          { name: "t", kind: "triton", path: "/x" },
          { name: "t", kind: "dir", path: "/y" },
        ],
      },
      /caches\[1\]\.name: duplicate cache name "t"/,
    ],
    [
      { caches: [{ name: "t", kind: "triton", path: "${NOPE}/x" }] },
      /caches\[0\]\.path: environment variable NOPE is not set; .*\$\{NOPE:-/,
    ],
    [
      { caches: [{ name: "t", kind: "triton", path: "/x" }], save: { "max-dead-share": 2 } },
      /save\.max-dead-share: /,
    ],
    [
      { caches: [{ name: "i", kind: "inductor", path: "/x", restore: "lazy" }] },
      /k\.yml: caches\[0\]\.restore: lazy works for kind: triton only .*Inductor's readers open files directly.*set restore: eager/,
    ],
    [
      { caches: [{ name: "t", kind: "triton", path: "/x", restore: "later" }] },
      /caches\[0\]\.restore: .*"eager".*"lazy"/,
    ],
  ])("rejects %j with a message naming the field and the fix", (raw, message) => {
    expect(() => resolveConfig(raw, "k.yml", env, "/repo")).toThrow(message);
  });

  it("uses one Triton cache at TRITON_CACHE_DIR when there is no kcache.yml", () => {
    const dir = tempDir("noconfig");
    const c = loadConfig({ cwd: dir, env: { HOME: dir, TRITON_CACHE_DIR: "/data/triton" } });
    expect(c.source).toBe("(defaults)");
    expect(c.caches).toEqual([
      {
        name: "triton",
        kind: "triton",
        path: "/data/triton",
        env: "TRITON_CACHE_DIR",
        trustLocal: false,
        isolate: false,
        maxSize: null,
        lazy: false,
      },
    ]);
  });

  it("takes S3:// as s3:// and refuses a store scheme it has none of, never making a folder of it", async () => {
    const dir = tempDir("scheme");
    const caches = [{ name: "t", kind: "dir" as const, path: "/x" }];
    expect(resolveConfig({ caches }, "k.yml", { KCACHE_STORE: "S3://bkt/team" }, dir).store).toMatchObject({
      type: "s3",
      bucket: "bkt",
      prefix: "team/",
    });
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      "caches:\n  - name: t\n    kind: dir\n    path: ${HOME}/c\n",
    );
    fs.mkdirSync(path.join(dir, "c"));
    fs.writeFileSync(path.join(dir, "c", "f.txt"), "x");
    const r = await runCli(["save", "--store", "gs://bkt/p"], {
      env: { PATH: process.env.PATH, HOME: dir },
      cwd: dir,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/store=gs:\/\/bkt\/p: kcache has no gs:\/\/ store; write s3:\/\/bucket\/prefix/);
    expect(fs.existsSync(path.join(dir, "gs:"))).toBe(false);
  });

  it("lists every problem in a config at once, and says which setting a misspelt key meant", () => {
    const dir = tempDir("typos");
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      [
        "cachs:",
        "  - name: t",
        "    kind: triton",
        "    path: /x",
        "store:",
        "  typ: local",
        "  path: /y",
        "save:",
        "  compression-level: 40",
        "key:",
        "  prefx: a",
        "  bogus-setting: 1",
        "",
      ].join("\n"),
    );
    const file = path.join(dir, "kcache.yml");
    expect(loadErrors(dir)).toEqual([
      `${file}: caches: missing, and "cachs" is there: did you mean "caches"?`,
      `${file}: store.typ: not a setting kcache knows: did you mean "type"?`,
      `${file}: key.prefx: not a setting kcache knows: did you mean "prefix"?`,
      `${file}: key: Unrecognized key: "bogus-setting"; remove "bogus-setting" or check its spelling`,
      `${file}: save.compression-level: Too big: expected number to be <=19`,
    ]);
  });

  it("refuses profiles whose CI files, jobs or concurrency groups would share a name, each pair once", () => {
    const dir = tempDir("clashing-profiles");
    const profile = (name: string) => `  ${name}: { commands: [{ name: c, run: "true" }] }`;
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      [
        "caches: [{ name: t, kind: triton, path: /x }]",
        "profiles:",
        ...["a.b", "a-b", "x", "x-prewarm", "KDA", "kda", "ok"].map(profile),
        "",
      ].join("\n"),
    );
    const file = path.join(dir, "kcache.yml");
    expect(loadErrors(dir)).toEqual([
      `${file}: profiles.a-b: profiles "a.b" and "a-b" would name the same CI files, jobs or concurrency group (kcache-a-b: "." is written "-", and GitHub compares groups in any case); rename one`,
      `${file}: profiles.x-prewarm: profiles "x" and "x-prewarm" would name the same CI files, jobs or concurrency group (kcache-x-prewarm: "." is written "-", and GitHub compares groups in any case); rename one`,
      `${file}: profiles.kda: profiles "KDA" and "kda" would name the same CI files, jobs or concurrency group (kcache-kda: "." is written "-", and GitHub compares groups in any case); rename one`,
    ]);
  });

  it("fails clearly when an explicit config file is missing", () => {
    const dir = tempDir("missing");
    expect(() => loadConfig({ cwd: dir, file: "ci/kcache.yml", env: {} })).toThrow(
      `${path.join(dir, "ci/kcache.yml")}: no such config file`,
    );
    fs.writeFileSync(path.join(dir, "kcache.yml"), "caches: 3\n");
    expect(() => loadConfig({ cwd: dir, env: {} })).toThrow(/kcache\.yml: caches: .*expected array/);
  });

  it("reads S3 and GitHub cache stores from kcache.yml or $KCACHE_STORE", () => {
    const yml = resolveConfig(
      {
        caches: [{ name: "t", kind: "triton", path: "/x" }],
        store: {
          type: "s3",
          bucket: "ci-cache",
          prefix: "fla",
          endpoint: "http://minio:9000",
          "path-style": true,
          checksums: "when-required",
          "idle-timeout": "30s",
        },
      },
      "k.yml",
      env,
      "/repo",
    );
    expect(yml.store).toMatchObject({
      type: "s3",
      bucket: "ci-cache",
      prefix: "fla/",
      region: "us-east-1",
      endpoint: "http://minio:9000",
      pathStyle: true,
      checksums: "when-required",
      idleTimeoutMs: 30_000,
    });
    // Settings left unset are the backend's to default (DEFAULT_S3), not the config's.
    expect(yml.store).not.toHaveProperty("retries", 3);
    const fromEnv = resolveConfig(
      { caches: [{ name: "t", kind: "triton", path: "/x" }] },
      "k.yml",
      {
        ...env,
        KCACHE_STORE: "s3://bkt/team/a",
        KCACHE_S3_ENDPOINT: "http://ceph:7480",
        KCACHE_S3_PATH_STYLE: "1",
        AWS_REGION: "cn-north-4",
      },
      "/repo",
    );
    expect(fromEnv.store).toMatchObject({
      type: "s3",
      bucket: "bkt",
      prefix: "team/a/",
      endpoint: "http://ceph:7480",
      pathStyle: true,
      region: "cn-north-4",
    });
    expect(
      resolveConfig(
        { caches: [{ name: "t", kind: "dir", path: "/x" }] },
        "k.yml",
        { KCACHE_STORE: "gha" },
        "/",
      ).store,
    ).toEqual({ type: "gha" });
    expect(() =>
      resolveConfig(
        { caches: [{ name: "t", kind: "dir", path: "/x" }], store: { type: "s4" } },
        "k.yml",
        env,
        "/",
      ),
    ).toThrow(/k\.yml: store\.type: /);
    expect(() =>
      resolveConfig(
        {
          caches: [{ name: "t", kind: "dir", path: "/x" }],
          store: { type: "s3", bucket: "bkt", "idle-timeout": "soon" },
        },
        "k.yml",
        env,
        "/",
      ),
    ).toThrow(/store\.idle-timeout: use a number and a unit/);
  });

  it("interpolates a profile's paths when that profile runs, not when any command loads the file", async () => {
    const dir = tempDir();
    fs.writeFileSync(
      path.join(dir, "kcache.yml"),
      "caches:\n  - {name: t, kind: triton, path: /tmp/kcache-lazy}\nprofiles:\n  bench:\n    env: {RESULTS: out}\n    commands: [{name: a, run: 'true'}]\n    checks:\n      - {type: finite-positive, file: '${RESULTS}/r.json', fields: [ms]}\n      - {type: finite-positive, file: '${ONLY_IN_CI}/r.json', fields: [ms]}\n",
    );
    const r = await runCli(["stack", "--json"], { env: { PATH: process.env.PATH, HOME: dir }, cwd: dir });
    expect(r.stderr).not.toMatch(/not set/);
    expect(r.code).toBe(0);
    const config = loadConfig({ cwd: dir, env: {} });
    expect(() => profileConfig(config, "bench", {})).toThrow(
      /profiles\.bench\.checks\[1\]\.file: environment variable ONLY_IN_CI is not set/,
    );
    const { profile } = profileConfig(config, "bench", { ONLY_IN_CI: "/ci" });
    // The profile's own env: sets RESULTS for its run.
    expect(profile.checks.map((c) => (c as { file: string }).file)).toEqual(["out/r.json", "/ci/r.json"]);
  });

  it("checks an S3 endpoint as a URL after ${VAR} is expanded, naming the field", () => {
    const raw = {
      caches: [{ name: "t", kind: "triton", path: "/tmp/x" }],
      store: { type: "s3", bucket: "abc", endpoint: "${S3}" },
    };
    const ok = resolveConfig(raw, "kcache.yml", { S3: "http://127.0.0.1:9000" }, "/");
    expect(ok.store).toMatchObject({ type: "s3", endpoint: "http://127.0.0.1:9000" });
    expect(() => resolveConfig(raw, "kcache.yml", { S3: "minio:9000" }, "/")).toThrow(
      /kcache\.yml: store\.endpoint: "minio:9000" is not an http\(s\) URL|kcache\.yml: store\.endpoint: "minio:9000" is not a URL/,
    );
  });

  it("refuses a cache at the filesystem root, the home folder, or above the working folder", () => {
    for (const [where, message] of [
      ["/", /is the filesystem root/],
      ["/home/ci", /is the home folder/],
      ["/repo", /is the working folder or a folder above it/],
      ["/", /a cache needs a folder of its own/],
    ] as const) {
      expect(() =>
        resolveConfig(
          { caches: [{ name: "t", kind: "dir", path: where }] },
          "kcache.yml",
          { HOME: "/home/ci" },
          "/repo/sub",
        ),
      ).toThrow(message);
    }
  });
});
