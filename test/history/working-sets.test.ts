import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { relatimeFolder, tempRecordsReads } from "../helpers/atime.js";
import { runCli } from "../helpers/cli.js";
import { project } from "../helpers/project.js";
import { canMountTmpfs } from "../helpers/tmpfs.js";

describe.skipIf(!tempRecordsReads && !canMountTmpfs)(
  "a key's working set, as restore, save, inspect --entries and stats show it",
  () => {
    it("reports the entries a job used, carried unused and evicted, each entry's last use, and each prefix's trend", async () => {
      const p = project();
      generateTritonCache(p.cache, { entries: 20, totalBytes: 400_000 });
      const first = await runCli(["save"], { env: { ...p.env, GITHUB_SHA: "a".repeat(40) }, cwd: p.dir });
      expect(first.code, first.stderr).toBe(0);
      // A second runner at another path: the job reads only some kernels.
      const root = path.join(relatimeFolder("runner-2") as string, "cache");
      const env = {
        ...p.env,
        GITHUB_SHA: "b".repeat(40),
        CACHE_ROOT: root,
        KCACHE_STATE_DIR: path.join(p.dir, "s2"),
      };
      const restored = await runCli(["restore"], { env, cwd: p.dir });
      expect(restored.stderr).toMatch(
        /working set: 20 entries \([^)]+\) used at the key's save, 0 \(0 B\) carried unused; reads are recorded here/,
      );
      const read = fs
        .readdirSync(root)
        .filter((n) => !n.startsWith("."))
        .slice(0, 8);
      for (const e of read)
        for (const f of fs.readdirSync(path.join(root, e))) fs.readFileSync(path.join(root, e, f));
      const saved = await runCli(["save", "--json"], { env, cwd: p.dir });
      expect(saved.stderr).toMatch(
        /use \(atime\): 8 entries \([^)]+\) used, 12 \([^)]+\) unused and kept, none evicted/,
      );
      const report = JSON.parse(saved.stdout);
      expect(report.usage).toMatchObject({
        source: "atime",
        generation: 1,
        live: { entries: 8 },
        unused: { entries: 12 },
      });

      const inspected = await runCli(["inspect", report.primaryKey, "--entries"], { env, cwd: p.dir });
      expect(inspected.stdout).toMatch(
        /use +save 1 of its chain: 8 entries .* used at it, 12 .* carried unused/,
      );
      const lines = inspected.stdout.split("\n");
      expect(lines.filter((l) => l.includes("this save (bbbbbbbbbbbb")).length).toBe(8);
      expect(lines.filter((l) => l.includes("1 save ago (aaaaaaaaaaaa")).length).toBe(12);

      const stats = await runCli(["stats", "--json"], { env, cwd: p.dir });
      const sets = JSON.parse(stats.stdout).workingSets;
      expect(sets).toHaveLength(1);
      expect(sets[0]).toMatchObject({
        prefix: "trust",
        newest: { key: report.primaryKey, generation: 1, live: { entries: 8 }, unused: { entries: 12 } },
        earlier: { generation: 0, live: { entries: 20 }, unused: { entries: 0 } },
        saves: 1,
      });
      const text = await runCli(["stats"], { env, cwd: p.dir });
      expect(text.stdout).toMatch(
        /\| trust \| trust-[0-9a-f]{12}-b{40} \| 8 entries, [^|]+ \| 12 entries, [^|]+ \| \d+% \| 1 saves before: /,
      );
    });
  },
);
