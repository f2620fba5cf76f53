import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { dumpDom } from "../helpers/chromium.js";
import { tempDir } from "../helpers/sandbox.js";

const DEMO = path.resolve(import.meta.dirname, "../../build/demo/run-demo.js");

describe("the demo's run-history section (npm run demo -- --history)", () => {
  it("catches the planted 20% regression, passes the unchanged pull request, and kcache stats writes its figures and HTML", () => {
    const out = execFileSync(process.execPath, [DEMO, "--history"], {
      env: { ...process.env, KCACHE_DEMO_KEEP: "1", TMPDIR: tempDir("demo-history") },
    }).toString();
    const work = /kcache demo in (\S+)/.exec(out)?.[1] as string;
    try {
      expect(out).toMatch(
        /pull request 42, chunk_kda 20% slower: exit 6; .*op=chunk_kda: median_ms ratio 1\.2 not <= 1\.1/,
      );
      expect(out).toMatch(/baseline: the median of branch\/main's last 5 runs/);
      expect(out).toContain("pull request 43, unchanged: exit 0");
      // Only main's ten runs: the pull requests' never count.
      expect(out).toMatch(
        /^10 runs of branch\/main in local store .*; the store holds [\d.]+ [kM]?B for demo-history$/m,
      );
      expect(out).toMatch(/\| demo-history \| \d{4}-W\d\d \| 10 \| 10 \| 0 \/ 9 \/ 1 \| 90% \|/);
      // The same working set on every run of the demo: the bench reads its one kernel, as a job does.
      expect(out).toMatch(
        /\| demo-history \| demo-history-[0-9a-f]{12}-a{40} \| 1 entries, 8 B \| 0 entries, 0 B \| 0% \| 9 saves before: 8 B used, 0 B unused \|/,
      );
      // Named in the output and still there after the demo deleted its own folder.
      const html = /wrote (\S+kcache-demo-stats\.html)/.exec(out)?.[1] as string;
      expect(path.dirname(html)).not.toContain(work);
      expect(fs.existsSync(html)).toBe(true);
      const dom = dumpDom(html, work);
      expect(dom.match(/<rect class="hit"/g)).toHaveLength(1);
      expect(dom).toMatch(/<rect class="hit"[^>]*data-value="0\.900"/);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});

describe("the demo's stats page (npm run demo)", () => {
  it("shows the kernels the demo's own main job reported: compiled cold, loaded warm, and saved seconds no more than it measured", () => {
    const tmp = tempDir("demo-all");
    const out = execFileSync(process.execPath, [DEMO], {
      env: { ...process.env, KCACHE_DEMO_KEEP: "1", TMPDIR: tmp, TRITON_SIM_COMPILE_MS: "40" },
    }).toString();
    const work = /kcache demo in (\S+)/.exec(out)?.[1] as string;
    try {
      const row = (name: string) => {
        const m = new RegExp(`^\\| ${name}\\s+\\|\\s+(\\d+) \\|\\s+(\\d+) \\|\\s+([\\d.]+) \\|`, "m").exec(
          out,
        );
        return { compiled: Number(m?.[1]), loaded: Number(m?.[2]), seconds: Number(m?.[3]) };
      };
      const cold = row("cold \\(runner A\\)");
      const warm = row("warm via kcache \\(runner B, other path\\)");
      expect(cold.compiled).toBeGreaterThan(0);
      expect(warm.loaded).toBeGreaterThan(0);
      // kcache stats, as the demo printed it: main's drop-in runs, counted in kernels by the hook.
      const stats = new RegExp(
        `^\\| demo-bench \\| (\\d{4}-W\\d\\d) \\| 2 \\| 2 \\| 1 / 0 / 1 \\| 50% \\| ${cold.compiled + warm.compiled} \\| ${cold.loaded + warm.loaded} \\| [\\d.]+ / [\\d.]+ \\| (\\d+) \\|.*\\| - \\|$`,
        "m",
      ).exec(out);
      expect(stats, out).not.toBeNull();
      // Found kernels x one kernel's compile time: compiling not done, never more than the demo measured.
      const saved = /Warm run: .*?([\d.]+) s of compiling saved/.exec(out)?.[1];
      expect(Number(stats?.[2])).toBeGreaterThan(0);
      expect(Number(stats?.[2])).toBeLessThanOrEqual(Math.ceil(Number(saved)));
      // The page shows the same row.
      const html = /wrote (\S+kcache-demo-stats\.html)/.exec(out)?.[1] as string;
      const dom = dumpDom(html, work);
      expect(dom).toContain(
        `<td>demo-bench</td><td>${stats?.[1]}</td><td>2</td><td>2</td><td>1 / 0 / 1</td><td>50%</td><td>${cold.compiled + warm.compiled}</td><td>${cold.loaded + warm.loaded}</td>`,
      );
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});
