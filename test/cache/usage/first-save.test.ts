import { describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli.js";
import { project } from "../../helpers/project.js";
import { runSimWorkload } from "../../helpers/python-sim.js";

describe("the first save of a key, after a miss", () => {
  it("says every entry is the job's own, not that use is unknown", async () => {
    const p = project();
    const restored = await runCli(["restore"], { env: p.env, cwd: p.dir });
    expect(restored.stderr).toMatch(/cache miss/);
    runSimWorkload(p.cache, { plain: 3, autotuned: 0 });
    const saved = await runCli(["save"], { env: p.env, cwd: p.dir });
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stderr).not.toMatch(/use unknown/);
    expect(saved.stderr).toMatch(
      /kcache: the key's first save: every entry is this job's own: \d+ entries \([\d.]+ kB\), nothing to evict/,
    );
  });
});
