import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { installedStack } from "../fixtures/installed-stack.js";
import { generateTritonCache, rng, tritonKeyName, writeKernelEntry } from "../fixtures/triton-cache.js";
import { corruptEntries, entryNames } from "../helpers/entry-compare.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { tempDir } from "../helpers/sandbox.js";
import { canMountTmpfs, mountTmpfs } from "../helpers/tmpfs.js";
import { filesOutside, randomInt, Tally } from "./harness.js";

function projectWith(yml: string) {
  const dir = tempDir("kcache-dsc");
  fs.writeFileSync(path.join(dir, "kcache.yml"), yml);
  const env = (over: Record<string, string>): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    PYTHONPATH: installedStack(),
    HOME: dir,
    GITHUB_REF: "refs/heads/main",
    GITHUB_SHA: "9".repeat(40),
    KCACHE_STATE_DIR: path.join(dir, "state"),
    ...over,
  });
  return { dir, env };
}

const TRITON_YML =
  "caches:\n  - name: triton\n    kind: triton\n    path: ${CACHE_ROOT}\nstore:\n  path: ${STORE}\nkey:\n  prefix: dsc\n";

describe.skipIf(!canMountTmpfs)("a full filesystem (real tmpfs mounts; runs as root only)", () => {
  it("restores into 10 tmpfs of random small sizes and saves onto a full one: nothing corrupt, exit 3 under --strict", async () => {
    const p = projectWith(TRITON_YML);
    const source = path.join(p.dir, "source");
    generateTritonCache(source, { entries: 40, totalBytes: 6_000_000, seed: 31 });
    const store = path.join(p.dir, "store");
    const tally = new Tally("full filesystem");
    tally.run(await runMeasured(["save"], { env: p.env({ CACHE_ROOT: source, STORE: store }), cwd: p.dir }));
    for (let i = 0; i < 10; i++) {
      const disk = path.join(p.dir, `disk-${i}`);
      mountTmpfs(disk, `${randomInt(1024, 6144)}k`);
      const strict = i % 2 === 1;
      const r = await runMeasured(["restore", ...(strict ? ["--strict"] : [])], {
        env: p.env({ CACHE_ROOT: disk, STORE: store, KCACHE_STATE_DIR: path.join(p.dir, `rs-${i}`) }),
        cwd: p.dir,
      });
      tally.run(r);
      tally.row.trials++;
      const complete = entryNames(disk).length === 40;
      if (corruptEntries(source, disk).length) tally.row.corruptRestores++;
      // Lenient: exit 0; strict: exit 3 unless the disk happened to be big enough.
      expect(r.code).toBe(strict && !complete ? 3 : 0);
    }
    const storeDisk = path.join(p.dir, "store-disk");
    mountTmpfs(storeDisk, "1m");
    for (const strict of [false, true]) {
      const r = await runMeasured(["save", ...(strict ? ["--strict"] : [])], {
        env: p.env({
          CACHE_ROOT: source,
          STORE: path.join(storeDisk, "s"),
          KCACHE_STATE_DIR: path.join(p.dir, `ss-${strict}`),
        }),
        cwd: p.dir,
      });
      tally.run(r);
      tally.row.trials++;
      expect(r.code).toBe(strict ? 3 : 0);
    }
    expect(fs.existsSync(path.join(storeDisk, "s", "manifests"))).toBe(false);
    const row = tally.save();
    expect(row.corruptRestores).toBe(0);
  });
});

/** Events whose runs GitHub starts on the default branch's ref although a pull request's code may run. */
const PR_EVENTS: [string, string, unknown][] = [
  ["pull_request_target", "pull_request_target", { number: 5, pull_request: { number: 5 } }],
  ["issue_comment", "issue_comment", { issue: { number: 6, pull_request: {} } }],
  [
    "workflow_run",
    "workflow_run",
    { workflow_run: { event: "pull_request", pull_requests: [{ number: 7 }] } },
  ],
  [
    "workflow_run (fork)",
    "workflow_run",
    { workflow_run: { event: "pull_request", pull_requests: [], head_repository: { full_name: "fork/x" } } },
  ],
  ["unknown event", "future_event", {}],
];

describe("pull-request events", () => {
  it("each event that may run a pull request's code saves outside the default branch's scope", async () => {
    const p = projectWith(TRITON_YML);
    const store = path.join(p.dir, "store");
    const tally = new Tally("pull-request events on the default branch's ref");
    for (const [name, event, payload] of PR_EVENTS) {
      const folder = path.join(p.dir, `pr-${name.replace(/\W+/g, "-")}`);
      writeKernelEntry(folder, tritonKeyName(`pr-kernel-${name}`), "pr_kernel", 4000, rng(1));
      const eventFile = path.join(p.dir, `event-${event}.json`);
      fs.writeFileSync(
        eventFile,
        JSON.stringify({
          repository: { default_branch: "main", full_name: "org/x" },
          ...(payload as object),
        }),
      );
      const gh = {
        GITHUB_ACTIONS: "true",
        GITHUB_EVENT_NAME: event,
        GITHUB_EVENT_PATH: eventFile,
        GITHUB_RUN_ID: "1",
      };
      tally.run(
        await runMeasured(["save"], {
          env: p.env({
            ...gh,
            CACHE_ROOT: folder,
            STORE: store,
            KCACHE_STATE_DIR: path.join(folder, "..", `st-${tally.row.trials}`),
          }),
          cwd: p.dir,
        }),
      );
      tally.row.trials++;
    }
    const mainEvent = path.join(p.dir, "event-push.json");
    fs.writeFileSync(mainEvent, JSON.stringify({ repository: { default_branch: "main" } }));
    const into = path.join(p.dir, "main-restore");
    const main = await runMeasured(["restore", "--json"], {
      env: p.env({
        GITHUB_ACTIONS: "true",
        GITHUB_EVENT_NAME: "push",
        GITHUB_EVENT_PATH: mainEvent,
        CACHE_ROOT: into,
        STORE: store,
        KCACHE_STATE_DIR: path.join(p.dir, "main-state"),
      }),
      cwd: p.dir,
    });
    tally.run(main);
    tally.row.foreignInDefault = entryNames(into).length;
    const row = tally.save();
    expect(row.foreignInDefault).toBe(0);
    expect(JSON.parse(main.stdout)).toMatchObject({ matchedKey: null });
  });
});

const BROKEN: [string, string | null, string[]][] = [
  ["config is a folder", null, ["restore", "-c", "."]],
  ["YAML syntax error", "caches:\n  - name: [unclosed\n", ["save"]],
  ["unknown field", "caches:\n  - {name: t, kind: triton, path: /tmp/x}\ncachez: 1\n", ["save"]],
  ["bad cache kind", "caches:\n  - {name: t, kind: trition, path: /tmp/x}\n", ["restore"]],
  ["unset variable", "caches:\n  - {name: t, kind: triton, path: ${NOT_SET_ANYWHERE}}\n", ["restore"]],
  [
    "two caches in one folder",
    "caches:\n  - {name: a, kind: triton, path: /tmp/x}\n  - {name: b, kind: dir, path: /tmp/x}\n",
    ["save"],
  ],
  [
    "prefix too long",
    `caches:\n  - {name: t, kind: triton, path: /tmp/x}\nkey:\n  prefix: ${"p".repeat(300)}\n`,
    ["save"],
  ],
  ["empty --revision", null, ["save", "--revision", ""]],
  ["600-character --revision", null, ["restore", "--revision", "r".repeat(600)]],
  [
    "unknown store type",
    "caches:\n  - {name: t, kind: triton, path: /tmp/x}\nstore: {type: ftp}\n",
    ["restore"],
  ],
  ["bad duration", null, ["prune", "--older-than", "soon"]],
];

describe("broken configs and arguments", () => {
  it("each exits 2 with a message naming the file or flag, never a stack trace", async () => {
    const tally = new Tally("broken config or arguments");
    for (const [, yml, args] of BROKEN) {
      const p = projectWith(yml ?? TRITON_YML);
      const r = await runMeasured(args, {
        env: p.env({ CACHE_ROOT: path.join(p.dir, "c"), STORE: path.join(p.dir, "s") }),
        cwd: p.dir,
      });
      tally.run(r);
      tally.row.trials++;
      expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
      expect(r.stderr).toMatch(/kcache\.yml|--revision|--older-than|-c|folder/);
      tally.row.writesOutside += filesOutside(p.dir, ["kcache.yml", "state"]).length;
    }
    const row = tally.save();
    expect(row.exitCodes).toEqual({ "2": BROKEN.length });
    expect(row.writesOutside).toBe(0);
  });
});
