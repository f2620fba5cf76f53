import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tritonKeyName } from "../fixtures/triton-cache.js";
import { windowDescriptor, zstdFrame } from "../fixtures/zstd-frames.js";
import { runCli } from "../helpers/cli.js";
import { entryDigest, plantPack, tarOf } from "../helpers/hostile-pack.js";
import { runMeasured } from "../helpers/measured-cli.js";
import { project } from "../helpers/project.js";
import { filesOutside, Tally } from "./harness.js";

const ENTRY = tritonKeyName("framed-entry");
const LAUNCHER = "a launcher that a damaged frame must not deliver";
const digest = entryDigest([["k.so", LAUNCHER]]);

/**
 * Packs whose tar is honest but whose zstd frames are not what kcache writes: each engine must refuse
 * them the same way (frame-guard.ts), before a window's memory is taken.
 */
const FRAMES: [string, (tar: Buffer) => Promise<Buffer>, RegExp][] = [
  [
    "a legal frame declaring a 1 GiB window",
    (tar) => zstdFrame({ content: tar, window: windowDescriptor(30) }),
    /1024 MiB window/,
  ],
  [
    "a content checksum that does not match",
    (tar) => zstdFrame({ content: tar, checksum: "wrong" }),
    /checksum/i,
  ],
  [
    "bytes after the last frame",
    async (tar) => Buffer.concat([await zstdFrame({ content: tar }), Buffer.from("trailing bytes")]),
    /after the last frame/,
  ],
];
const ENGINES = ["napi", "system", "wasm"] as const;

describe("zstd frames kcache never writes", () => {
  for (const [kind, compress, why] of FRAMES)
    it.each(ENGINES)(
      `${kind}, read with the %s engine: refused with the same fault, --strict exits 3`,
      async (engine) => {
        const p = project();
        const env = { ...p.env, KCACHE_ZSTD: engine };
        const key = (
          JSON.parse((await runCli(["key", "--json"], { env, cwd: p.dir })).stdout) as { key: string }
        ).key;
        await plantPack({
          store: p.store,
          key,
          prefix: "trust",
          members: [{ type: "File", path: `triton/${ENTRY}/k.so`, data: LAUNCHER }],
          entries: [{ name: ENTRY, ...digest }],
          compress,
        });
        const tally = new Tally(`zstd frames: ${kind} (${engine})`);
        const plain = await runMeasured(["restore"], { env, cwd: p.dir, timeoutMs: 120_000 });
        tally.run(plain);
        const strict = await runMeasured(["restore", "--strict"], {
          env: {
            ...env,
            CACHE_ROOT: `${p.cache}-strict`,
            KCACHE_STATE_DIR: path.join(p.dir, "state-strict"),
          },
          cwd: p.dir,
          timeoutMs: 120_000,
        });
        tally.run(strict);
        tally.row.trials = 2;
        const ours = ["kcache.yml", "store", "state", "state-strict", "triton-cache", "triton-cache-strict"];
        tally.row.writesOutside = filesOutside(p.dir, ours).length;
        // Whatever was placed is the honest entry, whole: the frames are refused, never misread.
        for (const cache of [p.cache, `${p.cache}-strict`]) {
          const file = `${cache}/${ENTRY}/k.so`;
          if (fs.existsSync(file) && fs.readFileSync(file, "utf8") !== LAUNCHER) tally.row.corruptRestores++;
        }
        const row = tally.save();
        expect(plain.code).toBe(0);
        expect(plain.stderr).toMatch(why);
        expect(strict.code).toBe(3);
        expect(row).toMatchObject({ writesOutside: 0, corruptRestores: 0 });
        expect(row.peakRssMb ?? 0).toBeLessThan(200);
      },
    );
});

/** A pack's member of `bytes` whose tar is exactly `tarBytes` long (headers and padding counted). */
function memberFor(tarBytes: number): Buffer {
  const headersAndEnd = tarOf([{ type: "File", path: `triton/${ENTRY}/k.so`, data: "" }]).length;
  const data = Buffer.alloc(tarBytes - headersAndEnd);
  for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
  const tar = tarOf([{ type: "File", path: `triton/${ENTRY}/k.so`, data }]);
  expect(tar.length).toBe(tarBytes);
  return data;
}

describe("valid packs at zstd's boundaries", () => {
  // zstd-napi refused a pack of exactly 524,288 bytes of content ("zstd data ends inside a frame").
  const SIZES = [524_288 - 512, 524_288, 524_288 + 512];
  it.each(ENGINES)(
    "a pack of 524,288 bytes of tar and its neighbours, compressed by the zstd CLI, read with the %s engine: every entry restored",
    async (engine) => {
      const tally = new Tally(`zstd frames: a valid pack at the 512 KiB boundary (${engine})`);
      for (const size of SIZES) {
        const p = project();
        const env = { ...p.env, KCACHE_ZSTD: engine };
        const key = (
          JSON.parse((await runCli(["key", "--json"], { env, cwd: p.dir })).stdout) as { key: string }
        ).key;
        const data = memberFor(size);
        await plantPack({
          store: p.store,
          key,
          prefix: "trust",
          members: [{ type: "File", path: `triton/${ENTRY}/k.so`, data }],
          entries: [{ name: ENTRY, ...entryDigest([["k.so", data]]) }],
          compress: async (tar) => execFileSync("zstd", ["-q", "-c", "-3"], { input: tar }),
        });
        const r = await runMeasured(["restore", "--strict"], { env, cwd: p.dir, timeoutMs: 120_000 });
        tally.run(r);
        tally.row.trials++;
        const file = `${p.cache}/${ENTRY}/k.so`;
        if (!fs.existsSync(file) || !fs.readFileSync(file).equals(data)) tally.row.corruptRestores++;
        expect(r.code, `${size} bytes: ${r.stderr}`).toBe(0);
      }
      expect(tally.save()).toMatchObject({ corruptRestores: 0 });
    },
  );
});
