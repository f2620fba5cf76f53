import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CacheLocator } from "../../../src/cache/lazy/cache-locator.js";
import { tempDir } from "../../helpers/sandbox.js";

const ENTRY = "QH5PLF3WBW6ZXHEHPZPWP7GDTK4FBOCJVTSRWGZAXKYSIIEYXQQA";

describe("which cache an entry folder the job names lies in", () => {
  it("matches a cache by its path and by its real path, through a symlink either way", () => {
    const dir = tempDir("locator");
    const real = path.join(dir, "real-cache");
    fs.mkdirSync(real);
    const link = path.join(dir, "linked-cache");
    fs.symlinkSync(real, link);
    // kcache restored into the real folder; Triton names entries through the symlink.
    const viaLink = new CacheLocator([{ name: "triton", root: real }]);
    expect(viaLink.locate(path.join(link, ENTRY))).toEqual({
      cache: { name: "triton", root: real },
      name: ENTRY,
    });
    // kcache knows the symlink; Triton names the real folder.
    const viaReal = new CacheLocator([{ name: "triton", root: link }]);
    expect(viaReal.locate(path.join(real, ENTRY))?.cache.name).toBe("triton");
  });

  it("answers null for a folder outside every cache, a nested one, and a name that is no entry's", () => {
    const dir = tempDir("locator");
    const root = path.join(dir, "cache");
    fs.mkdirSync(root);
    const l = new CacheLocator([{ name: "triton", root }]);
    expect(l.locate(path.join(dir, "elsewhere", ENTRY))).toBeNull();
    expect(l.locate(path.join(root, ENTRY, ENTRY))).toBeNull();
    expect(l.locate(path.join(root, "tmp.pid_12_34"))).toBeNull();
    expect(l.locate(path.join(root, ".."))).toBeNull();
    expect(l.locate(path.join(root, ENTRY))?.name).toBe(ENTRY);
  });
});
