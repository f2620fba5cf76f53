import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tritonKeyName } from "../fixtures/triton-cache.js";
import { runCli } from "../helpers/cli.js";
import { entryDigest, type Member, plantPack } from "../helpers/hostile-pack.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { project } from "../helpers/project.js";
import { filesOutside, Tally } from "./harness.js";

const GOOD = tritonKeyName("good-entry");
const BAD = tritonKeyName("bad-entry");
const good = entryDigest([["k.so", "good launcher"]]);
const small = entryDigest([["k.so", "fifteen bytes!!"]]);
const MB = 1024 * 1024;

/** Each pack an attacker (or a damaged store) could hand out, beside one honest entry. */
const KINDS: [string, (outside: string) => Member[]][] = [
  ["'..' in a member path", () => [{ type: "File", path: `triton/${BAD}/../../../escape.txt`, data: "x" }]],
  ["absolute member path", (o) => [{ type: "File", path: path.join(o, "absolute.txt"), data: "x" }]],
  [
    "symlink member",
    (o) => [{ type: "SymbolicLink", path: `triton/${BAD}/k.so`, linkpath: path.join(o, "t") }],
  ],
  ["hard link member", () => [{ type: "Link", path: `triton/${BAD}/k.so`, linkpath: "/etc/passwd" }]],
  ["device member", () => [{ type: "CharacterDevice", path: `triton/${BAD}/k.so` }]],
  ["FIFO member", () => [{ type: "FIFO", path: `triton/${BAD}/k.so` }]],
  [
    "PAX header renaming a member outside",
    (o) => [
      {
        type: "PaxOverride",
        paxPath: path.join(o, "pax.txt"),
        path: `triton/${BAD}/k.so`,
        data: "fifteen bytes!!",
      },
    ],
  ],
  [
    "entry listed twice",
    () => [
      { type: "File", path: `triton/${BAD}/k.so`, data: "fifteen bytes!!" },
      { type: "File", path: `triton/${BAD}/k.so`, data: "fifteen bytes!!" },
    ],
  ],
  [
    "more files than the manifest lists",
    () => [
      { type: "File", path: `triton/${BAD}/k.so`, data: "fifteen bytes!!" },
      { type: "File", path: `triton/${BAD}/extra.so`, data: "" },
    ],
  ],
  [
    "disk bomb (300 MB member, 15-byte entry)",
    () => [{ type: "Zeros", path: `triton/${BAD}/k.so`, size: 300 * MB }],
  ],
  [
    "memory bomb (40 members of 20 MB, 15-byte entry)",
    () =>
      Array.from({ length: 40 }, (_, i) => ({
        type: "Zeros" as const,
        path: `triton/${BAD}/f${i}.so`,
        size: 20 * MB,
      })),
  ],
  [
    "expansion bomb (1 GB unlisted member)",
    () => [{ type: "Zeros", path: `triton/${tritonKeyName("x")}/x.so`, size: 1024 * MB }],
  ],
];

describe("hostile packs", () => {
  it.each(KINDS)(
    "%s: refused, nothing outside the cache, bounded memory, exit 3 under --strict",
    async (kind, members) => {
      const p = project();
      const outside = path.join(p.dir, "outside");
      fs.mkdirSync(outside);
      const key = (
        JSON.parse((await runCli(["key", "--json"], { env: p.env, cwd: p.dir })).stdout) as { key: string }
      ).key;
      await plantPack({
        store: p.store,
        key,
        prefix: "trust",
        members: [{ type: "File", path: `triton/${GOOD}/k.so`, data: "good launcher" }, ...members(outside)],
        entries: [
          { name: GOOD, ...good },
          { name: BAD, ...small },
        ],
      });
      const tally = new Tally(`hostile pack: ${kind}`);
      const run = await runMeasured(["restore", "--strict"], { env: p.env, cwd: p.dir, timeoutMs: 120_000 });
      tally.run(run);
      tally.row.trials = 1;
      tally.row.writesOutside = filesOutside(p.dir, ["kcache.yml", "store", "state", "triton-cache"]).length;
      for (const f of ["/escape.txt", path.join(p.dir, "..", "escape.txt")])
        if (fs.existsSync(f)) tally.row.writesOutside++;
      const placed = fs.existsSync(p.cache)
        ? fs.readdirSync(p.cache).filter((e) => !e.startsWith(".kcache-"))
        : [];
      // Only the honest entry may be there, whole.
      if (placed.some((e) => e !== GOOD)) tally.row.corruptRestores++;
      if (
        placed.includes(GOOD) &&
        fs.readFileSync(path.join(p.cache, GOOD, "k.so"), "utf8") !== "good launcher"
      )
        tally.row.corruptRestores++;
      const row = tally.save();
      expect(run.code).toBe(3);
      expect(row).toMatchObject({ writesOutside: 0, corruptRestores: 0 });
      expect(row.peakRssMb ?? 0).toBeLessThan(200);
    },
  );
});
