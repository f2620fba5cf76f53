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
