import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { generateWorkflows } from "../../src/github/workflows.js";

const DIR = path.resolve(import.meta.dirname, "../../examples/torch-compile");

describe("examples/torch-compile", () => {
  it("is one inductor cache, found by the job through TORCHINDUCTOR_CACHE_DIR, and a profile that must be warm", () => {
    const config = loadConfig({
      file: path.join(DIR, "kcache.yml"),
      env: { TORCHINDUCTOR_CACHE_DIR: "/runner/tmp/torchinductor" },
      cwd: "/repo",
    });
    expect(config.caches).toEqual([
      {
        name: "inductor",
        kind: "inductor",
        path: "/runner/tmp/torchinductor",
        env: "TORCHINDUCTOR_CACHE_DIR",
        trustLocal: false,
        isolate: false,
        maxSize: null,
        lazy: false,
      },
    ]);
    const profile = config.profiles["compile-bench"];
    expect(profile?.expect).toBe("warm");
    expect(profile?.commands).toHaveLength(1);
    expect(fs.readFileSync(path.join(DIR, "model.py"), "utf8")).toContain(
      'mode="max-autotune-no-cudagraphs"',
    );
  });

  it("ships the workflow kcache workflow writes for it", () => {
    const config = loadConfig({ file: path.join(DIR, "kcache.yml"), env: {}, cwd: "/repo" });
    const [w] = generateWorkflows(config, "compile-bench", {
      configPath: "examples/torch-compile/kcache.yml",
    });
    expect(fs.readFileSync(path.join(DIR, "workflows", w?.file as string), "utf8")).toBe(w?.text);
  });
});
