import { execFileSync } from "node:child_process";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { ZSTD_ENGINES, zstdEngine } from "../../src/pack/zstd/engines.js";

/*
 * Every engine reads every content size around zstd's boundaries: its 128 KiB block, the 512 KiB
 * output buffer the in-process engines reuse (zstd-napi refused a frame of exactly 524,288 bytes as
 * "ends inside a frame"), 1, 2 and 8 MiB windows, and the chunks a pack is written in. Frames from the
 * system zstd (single-shot and streamed) and from each engine's own compressor.
 */
const K = 1024;
const SIZES = [128 * K, 512 * K, 1024 * K, 2048 * K, 8192 * K].flatMap((b) => [b - 1, b, b + 1]).concat([1]);

function content(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i + 4 <= n; i += 4096) b.writeUInt32LE((i * 2654435761) >>> 0, i);
  return b;
}

describe("zstd engines at block, buffer and window boundaries", async () => {
  const engines = (
    await Promise.all(
      ZSTD_ENGINES.map((n) =>
        zstdEngine(n).then(
          (e) => e,
          () => null,
        ),
      ),
    )
  ).filter((e) => e !== null);

  it("has the engines this machine offers", () => expect(engines.map((e) => e.name)).toContain("system"));

  it.each(SIZES)("%i bytes", async (n) => {
    const data = content(n);
    const frames = [
      execFileSync("zstd", ["-q", "-c", "-3"], { input: data, maxBuffer: 64 * 1024 * 1024 }),
      execFileSync("sh", ["-c", "cat | zstd -q -c -3"], { input: data, maxBuffer: 64 * 1024 * 1024 }),
    ];
    for (const e of engines) frames.push(await buffer(Readable.from([data]).pipe(e.compressStream(3))));
    for (const frame of frames)
      for (const e of engines) {
        // The stream engine, and the in-process one fed in odd pieces (a pack's reads).
        const streamed = await buffer(Readable.from([frame]).pipe(e.decompressStream()));
        expect(streamed.equals(data), `${e.name} stream, ${n} bytes`).toBe(true);
        if (e.chunks) {
          const d = e.chunks.decompressor();
          const out: Buffer[] = [];
          for (let i = 0; i < frame.length; i += 65_537)
            d.push(frame.subarray(i, i + 65_537), (c) => out.push(Buffer.from(c)));
          expect(() => d.end(), `${e.name} chunks, ${n} bytes`).not.toThrow();
          d.release();
          expect(Buffer.concat(out).equals(data), `${e.name} chunks, ${n} bytes`).toBe(true);
        }
      }
  });
});
