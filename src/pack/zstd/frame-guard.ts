import { Duplex, Transform } from "node:stream";
import type { ChunkDecompressor } from "./chunk-codecs.js";

/**
 * The frame checks every Zstandard engine runs before it decodes a byte, so that all of them refuse
 * the same packs (RFC 8878's frame format, read by hand: no library parses frames without decoding
 * them, and this is a few fields). The engines disagree on their own: fzstd trusts any window up to
 * 2 GiB and never checks a content checksum, Node's zlib accepts bytes after the last frame, and
 * libzstd's limit (128 MiB windows) is 16 times what kcache writes.
 *
 * Refused: a window above MAX_WINDOW_BYTES (the most kcache writes: levels 1 to 19 stream with a
 * window of at most 2^23 bytes), a block larger than its window or zstd's 128 KiB, a reserved block
 * type or header bit, a dictionary (kcache uses none), a skippable frame (kcache writes none), any
 * byte after the last frame that does not begin a frame, and input that ends inside a frame. The
 * content checksum (where a frame has one) is read here and checked by the engine: libzstd always
 * checks it, and the WebAssembly engine checks it against the frame's output (portable.ts).
 */

/** The largest window a pack's frame may declare: 8 MiB, zstd's window at level 19 (kcache's highest). */
export const MAX_WINDOW_BYTES = 8 * 1024 * 1024;
/** zstd's largest block. */
const MAX_BLOCK_BYTES = 128 * 1024;
const FRAME_MAGIC = 0xfd2fb528;
const SKIPPABLE_MAGIC = 0x184d2a50;

/** A pack's compressed bytes are not frames kcache would write or can read. */
export class ZstdFrameError extends Error {}

type Field = "magic" | "descriptor" | "header" | "block" | "checksum";

/** Frame structure checked as compressed bytes pass, in pieces of any size; nothing is copied but headers. */
export class FrameGuard {
  private field: Field = "magic";
  private need = 4;
  private readonly small = Buffer.alloc(14);
  private have = 0;
  /** Bytes of the current block's body still to pass. */
  private body = 0;
  private lastBlock = false;
  private checksum = false;
  private single = false;
  private descriptor = 0;
  private blockMax = 0;
  /** Bytes seen before the current piece, for errors that say where. */
  private seen = 0;
  frames = 0;

  /**
   * Checks `input`, calling `onFrameEnd(at, checksum)` where a frame ends (`at`: the index in
   * `input` just past it; `checksum`: its content checksum, or null where it has none). Throws a
   * ZstdFrameError at the first fault, before any byte after it is accepted.
   */
  scan(input: Uint8Array, onFrameEnd?: (at: number, checksum: number | null) => void): void {
    let i = 0;
    while (i < input.length) {
      if (this.body > 0) {
        const n = Math.min(this.body, input.length - i);
        i += n;
        this.body -= n;
        if (this.body === 0) this.blockDone(i, onFrameEnd);
        continue;
      }
      const n = Math.min(this.need - this.have, input.length - i);
      this.small.set(input.subarray(i, i + n), this.have);
      this.have += n;
      i += n;
      if (this.have === this.need) this.take(i, onFrameEnd);
    }
    this.seen += input.length;
  }

  /** The input ended: throws where it ended inside a frame or held none. */
  end(): void {
    if (this.field !== "magic" || this.have > 0 || this.body > 0)
      throw new ZstdFrameError("zstd data ends inside a frame (truncated?)");
    if (this.frames === 0) throw new ZstdFrameError("zstd data holds no frame");
  }

  private fail(at: number, what: string): never {
    throw new ZstdFrameError(`zstd frame ${this.frames + 1} at byte ${this.seen + at}: ${what}`);
  }

  private expect(field: Field, need: number): void {
    this.field = field;
    this.need = need;
    this.have = 0;
  }

  private take(at: number, onFrameEnd?: (at: number, checksum: number | null) => void): void {
    const s = this.small;
    switch (this.field) {
      case "magic": {
        const magic = s.readUInt32LE(0);
        if ((magic & 0xfffffff0) >>> 0 === SKIPPABLE_MAGIC)
          this.fail(at, "a skippable frame (kcache writes none)");
        if (magic !== FRAME_MAGIC)
          this.fail(at, this.frames ? "bytes after the last frame that begin no frame" : "not zstd data");
        this.expect("descriptor", 1);
        return;
      }
      case "descriptor": {
        const d = s[0] as number;
        if (d & 0x08) this.fail(at, "a reserved header bit is set");
        if (d & 0x03) this.fail(at, "it names a dictionary (kcache uses none)");
        this.descriptor = d;
        this.single = (d & 0x20) !== 0;
        this.checksum = (d & 0x04) !== 0;
        const fcs = d >> 6;
        const fcsBytes = fcs === 0 ? (this.single ? 1 : 0) : 1 << fcs;
        this.expect("header", (this.single ? 0 : 1) + fcsBytes);
        return;
      }
      case "header": {
        const window = this.single ? this.contentSize() : windowOf(s[0] as number);
        if (window > MAX_WINDOW_BYTES)
          this.fail(
            at,
            `it declares a ${mib(window)} window; kcache writes at most ${mib(MAX_WINDOW_BYTES)} (a pack written by something else, or damaged)`,
          );
        this.blockMax = Math.min(window, MAX_BLOCK_BYTES);
        this.expect("block", 3);
        return;
      }
      case "block": {
        const h = (s[0] as number) | ((s[1] as number) << 8) | ((s[2] as number) << 16);
        this.lastBlock = (h & 1) === 1;
        const type = (h >> 1) & 3;
        const size = h >>> 3;
        if (type === 3) this.fail(at, "a block of the reserved type");
        if (size > this.blockMax)
          this.fail(at, `a block of ${size} bytes in a frame whose blocks hold at most ${this.blockMax}`);
        this.have = 0;
        this.body = type === 1 ? 1 : size;
        if (this.body === 0) this.blockDone(at, onFrameEnd);
        return;
      }
      case "checksum":
        this.frameDone(at, s.readUInt32LE(0), onFrameEnd);
        return;
    }
  }

  /** A single-segment frame's content size (its window), from the header bytes after the descriptor. */
  private contentSize(): number {
    const fcs = this.descriptor >> 6;
    const s = this.small;
    if (fcs === 0) return s[0] as number;
    if (fcs === 1) return s.readUInt16LE(0) + 256;
    if (fcs === 2) return s.readUInt32LE(0);
    return Number(s.readBigUInt64LE(0));
  }

  private blockDone(at: number, onFrameEnd?: (at: number, checksum: number | null) => void): void {
    if (!this.lastBlock) this.expect("block", 3);
    else if (this.checksum) this.expect("checksum", 4);
    else this.frameDone(at, null, onFrameEnd);
  }

  private frameDone(
    at: number,
    checksum: number | null,
    onFrameEnd?: (at: number, checksum: number | null) => void,
  ): void {
    this.frames++;
    this.expect("magic", 4);
    onFrameEnd?.(at, checksum);
  }
}

/** A frame's window size from its Window_Descriptor byte (RFC 8878, 3.1.1.1.2). */
function windowOf(descriptor: number): number {
  const base = 2 ** (10 + (descriptor >> 3));
  return base + (base / 8) * (descriptor & 7);
}

function mib(bytes: number): string {
  return `${+(bytes / 1024 / 1024).toFixed(2)} MiB`;
}

/** `inner` with its input checked first: it never sees a byte past a fault. */
export function guardedDecompressor(inner: ChunkDecompressor): ChunkDecompressor {
  const guard = new FrameGuard();
  return {
    push(input, emit) {
      guard.scan(input);
      inner.push(input, emit);
    },
    end() {
      guard.end();
      inner.end();
    },
    release: () => inner.release(),
  };
}

/** A stream engine (Node's zlib, the zstd binary) with its input checked first. */
export function guardedStream(inner: Duplex): Duplex {
  const guard = new FrameGuard();
  const check = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      try {
        guard.scan(chunk);
      } catch (e) {
        cb(e as Error);
        return;
      }
      cb(null, chunk);
    },
    flush(cb) {
      try {
        guard.end();
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
  });
  // By hand, not stream.compose: composed with the zstd binary's stream, a failure the process
  // reports after its input ended (a checksum mismatch) never reached the reader.
  check.pipe(inner);
  const outer = Duplex.from({ writable: check, readable: inner });
  check.on("error", (e) => outer.destroy(e));
  inner.on("error", (e) => outer.destroy(e));
  outer.on("close", () => {
    check.destroy();
    inner.destroy();
  });
  return outer;
}
