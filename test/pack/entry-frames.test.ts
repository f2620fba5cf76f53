import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cacheKind } from "../../src/kinds/registry.js";
import { tritonKind } from "../../src/kinds/triton.js";
import { TarReader } from "../../src/pack/read/tar-reader.js";
import { type BuiltPack, buildPack } from "../../src/pack/write/pack-builder.js";
import { zstdEngine } from "../../src/pack/zstd/engines.js";
import { generateTritonCache } from "../fixtures/triton-cache.js";
import { tempDir } from "../helpers/sandbox.js";

/** The members of a tar stream (or a piece of one, with no end-of-archive): path and size. */
function members(tar: Buffer): { path: string; size: number }[] {
  const out: { path: string; size: number }[] = [];
  const reader = new TarReader((m) => {
    out.push({ path: m.path, size: m.size });
    return { data: () => {}, end: () => {} };
  });
  reader.write(tar);
  reader.end();
  return out;
}

/*
 * Packs written to be read an entry at a time (issue 41's lazy restore): each entry in zstd frames of
 * its own, at a recorded [offset, bytes]. Those bytes alone decompress to exactly the entry's tar
 * members; the whole pack is still one valid .tar.zst that zstd and tar read as before.
 */
describe("packs whose entries can be read alone", () => {
  it.each(["napi", "wasm"] as const)(
    "with the %s engine: each entry's frames decompress alone to its members",
    async (name) => {
      const engine = await zstdEngine(name).catch(() => null);
      if (!engine?.chunks) return; // an engine this machine lacks (the suite's engine tests say which)
      const root = path.join(tempDir("frames"), "triton");
      generateTritonCache(root, { entries: 12, totalBytes: 1_500_000, seed: 4 });
      const scan = await tritonKind.scan(root);
      const result: BuiltPack = { entries: [], vanished: [], notRelocatable: [] };
      const inputs = scan.entries.map((entry) => ({ cache: "triton", kind: "triton" as const, root, entry }));
      const pack = Buffer.concat([
        ...buildPack(inputs, cacheKind, engine.chunks.compressor(3, 1), result, true),
      ]);
      expect(result.entries).toHaveLength(scan.entries.length);
      let next = 0;
      for (const e of result.entries) {
        const [offset, bytes] = e.frame as [number, number];
        expect(offset).toBe(next); // frames follow each other: nothing between them
        next = offset + bytes;
        const alone = execFileSync("zstd", ["-d", "-c", "-q"], {
          input: pack.subarray(offset, offset + bytes),
        });
        const m = members(alone);
        expect(
          m.every((x) => x.path.startsWith(`triton/${e.name}/`)),
          e.name,
        ).toBe(true);
        expect(m.reduce((s, x) => s + x.size, 0)).toBe(e.size);
      }
      // The whole pack: one .tar.zst, every entry in it.
      const whole = members(execFileSync("zstd", ["-d", "-c", "-q"], { input: pack, maxBuffer: 64 << 20 }));
      expect(new Set(whole.map((x) => x.path.split("/")[1])).size).toBe(scan.entries.length);
    },
  );

  it("without frames asked for, a pack records none (one stream, as before)", async () => {
    const engine = await zstdEngine("napi");
    if (!engine.chunks) throw new Error("napi has no in-process compressor");
    const root = path.join(tempDir("frames"), "triton");
    generateTritonCache(root, { entries: 4, totalBytes: 200_000, seed: 5 });
    const scan = await tritonKind.scan(root);
    const result: BuiltPack = { entries: [], vanished: [], notRelocatable: [] };
    const inputs = scan.entries.map((entry) => ({ cache: "triton", kind: "triton" as const, root, entry }));
    [...buildPack(inputs, cacheKind, engine.chunks.compressor(3, 1), result)];
    expect(result.entries.every((e) => e.frame === undefined)).toBe(true);
  });
});
