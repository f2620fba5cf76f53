import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { project } from "../helpers/project.js";
import { tempDir } from "../helpers/sandbox.js";
import { Tally } from "./harness.js";

/**
 * docs/stores.md's memory bound: a whole save or restore of a 1 GB, 4,000-entry cache within 200 MB of
 * resident memory, a 108 MB one within 128 MB, whatever the machine. A runner's core count sets the
 * threads, so each case runs with the threads a 16-core runner takes by default ($KCACHE_THREADS: 16
 * for a large save, 2 pack builders of 4 zstd threads; 7 reading threads for a large restore; 4 for
 * a small one, one builder of 4 zstd threads and 4 readers), not this machine's two.
 */
const CASES: [string, { entries: number; bytes: number; save: string; restore: string; boundMb: number }][] =
  [
    ["1 GB, 4,000 entries", { entries: 4000, bytes: 1_000_000_000, save: "16", restore: "7", boundMb: 200 }],
    ["108 MB, 220 entries", { entries: 220, bytes: 108_000_000, save: "4", restore: "4", boundMb: 128 }],
  ];

describe("memory of a whole save and restore, bounded by threads, never by the cache", () => {
  it.each(CASES)(
    "%s: saved and restored whole within the stated bound",
    async (size, c) => {
      const p = project();
      generateTritonCache(p.cache, { entries: c.entries, totalBytes: c.bytes, seed: 7 });
      const tally = new Tally(`memory: save and restore of ${size}, a 16-core runner's threads`);
      const saved = await runMeasured(["save", "--json"], {
        env: { ...p.env, KCACHE_THREADS: c.save },
        cwd: p.dir,
        timeoutMs: 600_000,
      });
      tally.run(saved);
      expect(saved.code, saved.stderr).toBe(0);
      expect(JSON.parse(saved.stdout)).toMatchObject({ outcome: "saved", entries: c.entries });
      const fresh = tempDir("kcache-mem-restore");
      const restored = await runMeasured(["restore", "--json"], {
        env: { ...p.env, KCACHE_THREADS: c.restore, CACHE_ROOT: path.join(fresh, "triton") },
        cwd: p.dir,
        timeoutMs: 600_000,
      });
      tally.run(restored);
      expect(restored.code, restored.stderr).toBe(0);
      const report = JSON.parse(restored.stdout) as { entriesRestored: number; entriesBad: number };
      tally.row.trials = 1;
      if (report.entriesRestored !== c.entries || report.entriesBad !== 0) tally.row.corruptRestores++;
      const row = tally.save();
      fs.rmSync(p.dir, { recursive: true, force: true });
      fs.rmSync(fresh, { recursive: true, force: true });
      expect(report).toMatchObject({ entriesRestored: c.entries, entriesBad: 0 });
      expect(saved.peakRssMb, "save's peak RSS (MB)").toBeLessThanOrEqual(c.boundMb);
      expect(restored.peakRssMb, "restore's peak RSS (MB)").toBeLessThanOrEqual(c.boundMb);
      expect(row.peakRssMb).toBeLessThanOrEqual(c.boundMb);
      // Generating 1 GB of files takes minutes on a loaded 2-core machine: the limit ends a hang only.
    },
    900_000,
  );
});
