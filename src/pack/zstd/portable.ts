import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ChunkCompressor, ChunkDecompressor } from "./chunk-codecs.js";
import { FrameGuard, ZstdFrameError } from "./frame-guard.js";

/**
 * Zstandard with nothing native: compression by zstd's own C code built to WebAssembly
 * (@bokuweb/zstd-wasm, one file for x64 and arm64 alike) and decompression by fzstd (plain
 * JavaScript). The engine of last resort, where neither zstd-napi, Node's built-in zstd (22.15+) nor
 * a `zstd` binary is there: Node 20 in a bare container. Measured on 2 cores, 64 MB of Triton-like
 * data: compression 0.61 s (the system zstd -3: 0.30 s), decompression 0.34 s (zstd -d: 0.08 s).
 */

type Wasm = typeof import("@bokuweb/zstd-wasm");
type Xxhash = Awaited<ReturnType<typeof import("xxhash-wasm")["default"]>>;

/** Input gathered into one frame: frames this size compress within 2% of one whole stream. */
const FRAME_BYTES = 4 * 1024 * 1024;

let loading: Promise<Wasm> | undefined;

/**
 * Where the WebAssembly file is: beside this module in a bundle (dist/zstd.wasm, copied there by
 * the bundler), else in the installed package.
 */
export function wasmFile(): string | null {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, "zstd.wasm")];
  try {
    const main = createRequire(import.meta.url).resolve("@bokuweb/zstd-wasm");
    candidates.push(path.join(path.dirname(main), "zstd.wasm"));
  } catch {
    // Not installed: only a bundle's copy can serve.
  }
  return candidates.find((f) => fs.existsSync(f)) ?? null;
}

/** Loads the WebAssembly compressor once per thread; rejects when its file is missing or broken. */
export function loadWasm(): Promise<Wasm> {
  loading ??= (async () => {
    if (!wasmFile())
      throw new Error("zstd.wasm is missing (neither beside kcache nor in @bokuweb/zstd-wasm)");
    // A CommonJS package: its exports are the namespace's default under Node's ESM loader.
    const ns = (await import("@bokuweb/zstd-wasm")) as Wasm & { default?: Wasm };
    const wasm = ns.default ?? ns;
    await wasm.init();
    return wasm;
  })();
  return loading;
}

/** Compresses pushed pieces as a run of independent frames of FRAME_BYTES (zstd reads them as one stream). */
export class FrameCompressor implements ChunkCompressor {
  private readonly pending = Buffer.allocUnsafe(FRAME_BYTES);
  private filled = 0;

  constructor(
    private readonly wasm: Wasm,
    private readonly level: number,
  ) {}

  push(input: Buffer, emit: (chunk: Buffer) => void): void {
    let src = input;
    while (src.length > 0) {
      const n = Math.min(src.length, FRAME_BYTES - this.filled);
      src.copy(this.pending, this.filled, 0, n);
      this.filled += n;
      src = src.subarray(n);
      if (this.filled === FRAME_BYTES) this.flush(emit);
    }
  }

  endFrame(emit: (chunk: Buffer) => void): void {
    if (this.filled > 0) this.flush(emit);
  }

  end(emit: (chunk: Buffer) => void): void {
    if (this.filled > 0) this.flush(emit);
  }

  private flush(emit: (chunk: Buffer) => void): void {
    const frame = this.wasm.compress(this.pending.subarray(0, this.filled), this.level);
    this.filled = 0;
    emit(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
  }
}

let hashing: Promise<Xxhash> | undefined;

/** xxhash-wasm's XXH64 (zstd's content checksum), loaded once per thread. */
export function loadXxhash(): Promise<Xxhash> {
  hashing ??= import("xxhash-wasm").then((m) => m.default());
  return hashing;
}

/**
 * Decompresses a zstd stream (one frame or many) pushed in pieces; corrupt input throws. Frames are
 * checked first (frame-guard.ts); each is decoded by its own fzstd decoder, ended where the frame
 * ends, so its output is whole there and its content checksum (the low 32 bits of XXH64, which
 * fzstd skips) is checked against it.
 */
export class JsDecompressor implements ChunkDecompressor {
  private readonly guard = new FrameGuard();
  private frame: import("fzstd").Decompress | null = null;
  private hash: ReturnType<Xxhash["create64"]> | null = null;
  private sink: ((chunk: Buffer) => void) | null = null;

  constructor(
    private readonly fzstd: typeof import("fzstd"),
    private readonly xxh: Xxhash,
  ) {}

  push(input: Buffer, emit: (chunk: Buffer) => void): void {
    this.sink = emit;
    // A copy: fzstd keeps views of earlier input across pushes, and callers reuse their buffers.
    const copy: Uint8Array = Uint8Array.prototype.slice.call(input);
    let from = 0;
    this.guard.scan(copy, (at, checksum) => {
      this.feed(copy.subarray(from, at), true);
      from = at;
      const hash = this.hash as NonNullable<typeof this.hash>;
      this.frame = null;
      this.hash = null;
      if (checksum !== null && Number(hash.digest() & 0xffffffffn) !== checksum)
        throw new ZstdFrameError(`zstd frame ${this.guard.frames}: content checksum mismatch (damaged)`);
    });
    if (from < copy.length) this.feed(copy.subarray(from), false);
  }

  private feed(bytes: Uint8Array, last: boolean): void {
    if (!this.frame) {
      const hash = this.xxh.create64();
      this.hash = hash;
      this.frame = new this.fzstd.Decompress((data) => {
        if (!data.length) return;
        hash.update(data);
        this.sink?.(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      });
    }
    this.frame.push(bytes, last);
  }

  end(): void {
    this.guard.end();
  }

  release(): void {}
}
