import { randomBytes } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, expect, it } from "vitest";
import { ZSTD_ENGINES, type ZstdEngine, zstdEngine } from "../../src/pack/zstd/engines.js";
import { FrameGuard, MAX_WINDOW_BYTES } from "../../src/pack/zstd/frame-guard.js";
import { skippableFrame, windowDescriptor, zstdFrame } from "../fixtures/zstd-frames.js";

/** The engines that work on this machine (Node 20 has no zlib zstd; CI has the other three). */
const engines: ZstdEngine[] = [];
for (const name of ZSTD_ENGINES) {
  try {
    engines.push(await zstdEngine(name));
  } catch {
    // not here
  }
}

/** Input in uneven pieces, so headers and checksums straddle them. */
function pieces(bytes: Buffer, size = 7777): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

/** Decompresses with `engine`, through its in-process codec or its stream. */
async function decode(engine: ZstdEngine, bytes: Buffer, via: "chunks" | "stream"): Promise<Buffer> {
  const out: Buffer[] = [];
  if (via === "chunks" && engine.chunks) {
    const d = engine.chunks.decompressor();
    try {
      for (const p of pieces(bytes)) d.push(p, (c) => out.push(Buffer.from(c)));
      d.end();
    } finally {
      d.release();
    }
    return Buffer.concat(out);
  }
  const sink = new Writable({
    write(c: Buffer, _e, cb) {
      out.push(c);
      cb();
    },
  });
  await pipeline(Readable.from(pieces(bytes)), engine.decompressStream(), sink);
  return Buffer.concat(out);
}

async function encode(engine: ZstdEngine, bytes: Buffer, level: number): Promise<Buffer> {
  const out: Buffer[] = [];
  const sink = new Writable({
    write(c: Buffer, _e, cb) {
      out.push(c);
      cb();
    },
  });
  await pipeline(Readable.from(pieces(bytes, 1 << 20)), engine.compressStream(level), sink);
  return Buffer.concat(out);
}

/** Compressible bytes: random words repeated, like a cache's text and binaries. */
function content(size: number): Buffer {
  const words = Array.from({ length: 512 }, () => randomBytes(12).toString("base64"));
  const parts: string[] = [];
  let n = 0;
  while (n < size) {
    const w = words[Math.floor(Math.random() * words.length)] as string;
    parts.push(w);
    n += w.length;
  }
  return Buffer.from(parts.join("")).subarray(0, size);
}

const paths = ["chunks", "stream"] as const;

describe("zstd frames: every engine refuses the same ones", () => {
  it("every engine's frames at levels 1, 3 and 19 fit the 8 MiB window cap, and every engine reads every other's", async () => {
    expect(engines.map((e) => e.name)).toEqual(expect.arrayContaining(["system", "wasm"]));
    const data = content(3 * 1024 * 1024);
    for (const writer of engines) {
      for (const level of [1, 3, 19]) {
        const packed = await encode(writer, data, level);
        const guard = new FrameGuard();
        guard.scan(packed);
        guard.end();
        for (const reader of engines)
          for (const via of paths)
            expect(
              (await decode(reader, packed, via)).equals(data),
              `${writer.name} -${level} read by ${reader.name} (${via})`,
            ).toBe(true);
      }
    }
  });

  const body = content(300 * 1024);
  const cases: [string, () => Promise<Buffer>, RegExp][] = [
    [
      "a legal frame declaring a 1 GiB window",
      () => zstdFrame({ content: body, window: windowDescriptor(30) }),
      /1024 MiB window/,
    ],
    [
      "a legal frame declaring a 64 MiB window (libzstd's own limit is 128 MiB)",
      () => zstdFrame({ content: body, window: windowDescriptor(26) }),
      /64 MiB window/,
    ],
    [
      "a single-segment frame of 9 MiB",
      () => zstdFrame({ content: Buffer.alloc(9 * 1024 * 1024, 7), single: true }),
      /9 MiB window/,
    ],
    [
      "a content checksum that does not match",
      () => zstdFrame({ content: body, checksum: "wrong" }),
      /checksum/i,
    ],
    [
      "bytes after the last frame",
      async () => Buffer.concat([await zstdFrame({ content: body }), Buffer.from("trailing garbage")]),
      /after the last frame/,
    ],
    [
      "a skippable frame after the last frame",
      async () => Buffer.concat([await zstdFrame({ content: body }), skippableFrame(Buffer.from("hidden"))]),
      /skippable/,
    ],
    [
      "a frame cut short",
      async () => (await zstdFrame({ content: body })).subarray(0, -5),
      /ends inside a frame/,
    ],
    ["a frame that names a dictionary", () => zstdFrame({ content: body, dictionary: 7 }), /dictionary/],
    ["a reserved header bit", () => zstdFrame({ content: body, reserved: true }), /reserved/],
    [
      "a block larger than its frame's window",
      () => zstdFrame({ content: body.subarray(0, 4096), window: windowDescriptor(10) }),
      /block of 4096 bytes/,
    ],
  ];

  it.each(cases)("%s: refused by every engine, in process and as a stream", async (_name, make, why) => {
    const bytes = await make();
    for (const engine of engines)
      for (const via of paths)
        await expect(decode(engine, bytes, via), `${engine.name} (${via})`).rejects.toThrow(why);
  });

  it("the same frames, honest (an 8 MiB window, a right checksum, several frames), are read by every engine", async () => {
    const frames = Buffer.concat([
      await zstdFrame({ content: body }),
      await zstdFrame({ content: body.subarray(0, 1000), checksum: "none", window: windowDescriptor(20) }),
      await zstdFrame({ content: Buffer.alloc(0) }),
      await zstdFrame({ content: body.subarray(5), single: true }),
    ]);
    const expected = Buffer.concat([body, body.subarray(0, 1000), body.subarray(5)]);
    expect(MAX_WINDOW_BYTES).toBe(8 * 1024 * 1024);
    for (const engine of engines)
      for (const via of paths)
        expect((await decode(engine, frames, via)).equals(expected), `${engine.name} (${via})`).toBe(true);
  });
});
