import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  type AssetReader,
  placedRoot,
  placeRuntimeFiles,
  RUNTIME_FILES_ASSET,
} from "../../../src/cli/single-executable/runtime-files.js";
import { tempDir } from "../../helpers/sandbox.js";

/** An executable's assets as node:sea would give them: the files, and the list of them. */
function assets(files: Record<string, string>, id = "0.1.0-abc"): { read: AssetReader; reads: string[] } {
  const list = {
    id,
    files: Object.fromEntries(Object.entries(files).map(([rel, text]) => [rel, Buffer.byteLength(text)])),
    sha256: Object.fromEntries(
      Object.entries(files).map(([rel, text]) => [rel, createHash("sha256").update(text).digest("hex")]),
    ),
  };
  const reads: string[] = [];
  const read: AssetReader = (name) => {
    reads.push(name);
    if (name === RUNTIME_FILES_ASSET) return Buffer.from(JSON.stringify(list));
    const text = files[name];
    if (text === undefined) throw new Error(`no asset ${name}`);
    return Buffer.from(text);
  };
  return { read, reads };
}

const FILES = {
  "package.json": '{"name":"kcache","version":"0.1.0"}',
  "cli/pack-worker.js": "export {};\n",
  "python/kcache_hook/sitecustomize.py": "print('hook')\n",
};

describe("the single executable's files placed from its assets", () => {
  it("are placed once in the state folder, under the id of their content, and reused as they are", () => {
    const state = tempDir("sea-state");
    const first = assets(FILES);
    const root = placeRuntimeFiles({ KCACHE_STATE_DIR: state }, first.read);
    expect(root).toBe(path.join(state, "single-executable", "0.1.0-abc"));
    for (const [rel, text] of Object.entries(FILES))
      expect(fs.readFileSync(path.join(root, rel), "utf8")).toBe(text);
    // Nothing left beside it: the folder was written aside and renamed in.
    expect(fs.readdirSync(path.dirname(root))).toEqual(["0.1.0-abc"]);
    const again = assets(FILES);
    expect(placeRuntimeFiles({ KCACHE_STATE_DIR: state }, again.read)).toBe(root);
    expect(again.reads).toEqual([RUNTIME_FILES_ASSET]);
  });

  it("another build's files go to a folder of their own", () => {
    const state = tempDir("sea-state");
    const a = placeRuntimeFiles({ KCACHE_STATE_DIR: state }, assets(FILES, "0.1.0-aaa").read);
    const b = placeRuntimeFiles(
      { KCACHE_STATE_DIR: state },
      assets({ ...FILES, "cli/pack-worker.js": "//\n" }, "0.1.0-bbb").read,
    );
    expect(a).not.toBe(b);
    expect(fs.readFileSync(path.join(b, "cli/pack-worker.js"), "utf8")).toBe("//\n");
    expect(fs.readFileSync(path.join(a, "cli/pack-worker.js"), "utf8")).toBe("export {};\n");
  });

  it("a file of the right size with other content (a leftover, a planted hook) is placed again", () => {
    const state = tempDir("sea-state");
    const root = placeRuntimeFiles({ KCACHE_STATE_DIR: state }, assets(FILES).read);
    const hook = path.join(root, "python/kcache_hook/sitecustomize.py");
    const planted = "print('evil')\n".padEnd(FILES["python/kcache_hook/sitecustomize.py"].length, "#");
    fs.writeFileSync(hook, planted.slice(0, FILES["python/kcache_hook/sitecustomize.py"].length));
    expect(fs.statSync(hook).size).toBe(Buffer.byteLength(FILES["python/kcache_hook/sitecustomize.py"]));
    const again = assets(FILES);
    expect(placeRuntimeFiles({ KCACHE_STATE_DIR: state }, again.read)).toBe(root);
    expect(again.reads.length).toBeGreaterThan(1);
    expect(fs.readFileSync(hook, "utf8")).toBe(FILES["python/kcache_hook/sitecustomize.py"]);
  });

  it("the start-up part's commands learn where the files go and place nothing", () => {
    const state = tempDir("sea-state");
    const quick = assets(FILES);
    const root = placedRoot({ KCACHE_STATE_DIR: state }, quick.read);
    expect(quick.reads).toEqual([RUNTIME_FILES_ASSET]);
    expect(fs.readdirSync(state)).toEqual([]);
    expect(placeRuntimeFiles({ KCACHE_STATE_DIR: state }, assets(FILES).read)).toBe(root);
  });

  it.each([
    ["a file deleted (a cleaner of old files)", (f: string) => fs.rmSync(f)],
    ["a file cut short", (f: string) => fs.truncateSync(f, 3)],
    [
      "a file replaced by a link",
      (f: string) => {
        fs.rmSync(f);
        fs.symlinkSync("/etc/hostname", f);
      },
    ],
  ])("a folder left damaged (%s) is placed again whole", (_label, damage) => {
    const state = tempDir("sea-state");
    const root = placeRuntimeFiles({ KCACHE_STATE_DIR: state }, assets(FILES).read);
    damage(path.join(root, "python/kcache_hook/sitecustomize.py"));
    const again = assets(FILES);
    expect(placeRuntimeFiles({ KCACHE_STATE_DIR: state }, again.read)).toBe(root);
    expect(again.reads.length).toBeGreaterThan(1);
    expect(fs.readFileSync(path.join(root, "python/kcache_hook/sitecustomize.py"), "utf8")).toBe(
      "print('hook')\n",
    );
    expect(fs.lstatSync(path.join(root, "python/kcache_hook/sitecustomize.py")).isFile()).toBe(true);
    expect(fs.readdirSync(path.dirname(root))).toEqual(["0.1.0-abc"]);
  });

  it("where the state folder cannot be written, a folder of this process's own serves", () => {
    const dir = tempDir("sea-state");
    const notAFolder = path.join(dir, "state");
    fs.writeFileSync(notAFolder, "a file where the state folder would be");
    const root = placeRuntimeFiles({ KCACHE_STATE_DIR: notAFolder }, assets(FILES).read);
    expect(root.startsWith(notAFolder)).toBe(false);
    expect(fs.readFileSync(path.join(root, "package.json"), "utf8")).toBe(FILES["package.json"]);
  });

  it("where neither the state folder nor the temporary folder can be written, a config error names both and the fix", () => {
    const dir = tempDir("sea-state");
    const notAFolder = path.join(dir, "state");
    fs.writeFileSync(notAFolder, "a file where the state folder would be");
    const tmp = process.env.TMPDIR;
    process.env.TMPDIR = path.join(dir, "no-such-folder");
    try {
      expect(() => placeRuntimeFiles({ KCACHE_STATE_DIR: notAFolder }, assets(FILES).read)).toThrow(
        expect.objectContaining({
          exitCode: 2,
          message: expect.stringMatching(/no-such-folder.*set KCACHE_STATE_DIR \(or TMPDIR\)/),
        }),
      );
    } finally {
      if (tmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmp;
    }
  });
});
