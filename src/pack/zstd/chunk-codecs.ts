import { createRequire } from "node:module";

/**
 * zstd-napi's streaming contexts, driven synchronously: what a worker thread uses to (de)compress a
 * pack in place, with no child process, no pipe and one reused output buffer. Null when the native
 * addon cannot load (the bundled GitHub Action ships without it): zstd.ts picks another engine.
 */
type Binding = typeof import("zstd-napi/binding.js");

let binding: Binding | null | undefined;

type DCtx = InstanceType<Binding["DCtx"]>;
type CCtx = InstanceType<Binding["CCtx"]>;
/**
 * Contexts and output buffers not in use, kept for the next pack: zstd-napi reports each context's
 * memory to V8, and fresh ones per pack make V8 collect garbage again and again. Each (de)compressor
 * takes its own and gives it back at its end, so packs read at once never share one.
 */
const idle = {
  d: [] as { ctx: DCtx; out: Buffer }[],
  c: new Map<string, { ctx: CCtx; out: Buffer }[]>(),
};

export function zstdBinding(): Binding | null {
  if (binding === undefined) {
    try {
      binding = createRequire(import.meta.url)("zstd-napi/binding.js") as Binding;
    } catch {
      binding = null;
    }
  }
  return binding;
}

/** Something that turns pushed compressed pieces into decompressed pieces, synchronously. */
export interface ChunkDecompressor {
  /** `emit` may get a view of a reused buffer: it must use or copy it before returning. */
  push(input: Buffer, emit: (chunk: Buffer) => void): void;
  /** The input ended: an error when it ended inside a frame. */
  end(): void;
  /** Gives reusable state back; this decompressor is not used again. */
  release(): void;
}

/** Decompresses a zstd stream pushed in pieces, handing each decompressed piece (a reused buffer) on. */
export class SyncDecompressor implements ChunkDecompressor {
  private readonly dctx: DCtx;
  private readonly out: Buffer;
  /** 0 once the last frame ended; else more input is needed. */
  private hint = 1;

  constructor(b: Binding) {
    const reused = idle.d.pop() ?? { ctx: new b.DCtx(), out: Buffer.allocUnsafe(b.dStreamOutSize() * 4) };
    reused.ctx.reset(b.ResetDirective.sessionOnly);
    this.dctx = reused.ctx;
    this.out = reused.out;
  }

  /** Gives the context back for the next pack; this decompressor is not used again. */
  release(): void {
    idle.d.push({ ctx: this.dctx, out: this.out });
  }

  /** `emit` gets a view of the reused output buffer: it must use or copy it before returning. */
  push(input: Buffer, emit: (chunk: Buffer) => void): void {
    let src = input;
    for (;;) {
      const [hint, produced, consumed] = this.dctx.decompressStream(this.out, src);
      // A call that neither read nor wrote (the output was exactly full when the frame ended) answers
      // with the next frame's header size: it must not undo "the last frame ended" (hint 0). A frame
      // of exactly the buffer's size (524,288 bytes) was refused as truncated.
      if (consumed > 0 || produced > 0) this.hint = hint;
      src = src.subarray(consumed);
      if (produced > 0) emit(this.out.subarray(0, produced));
      if (src.length === 0 && produced < this.out.length) return;
    }
  }

  /** The input ended: an error when it ended inside a frame. */
  end(): void {
    if (this.hint !== 0) throw new Error("zstd data ends inside a frame (truncated?)");
  }
}

/** Something that turns pushed pieces into output pieces (fresh buffers), synchronously. */
export interface ChunkCompressor {
  push(input: Buffer, emit: (chunk: Buffer) => void): void;
  /**
   * Ends the frame here: what is pushed next starts a new one, so the bytes emitted between two
   * frame ends decompress alone (one entry of a pack, read by a ranged request). Absent where the
   * compressor cannot (the system zstd compresses in another process).
   */
  endFrame?(emit: (chunk: Buffer) => void): void;
  end(emit: (chunk: Buffer) => void): void;
}

/** No compression: pieces pass as copies (for a compressor that runs elsewhere, the system zstd). */
export const passThrough: ChunkCompressor = {
  push: (input, emit) => emit(Buffer.from(input)),
  end: () => {},
};

/** Compresses pieces pushed in, handing each compressed piece (a fresh buffer) on. */
export class SyncCompressor implements ChunkCompressor {
  private readonly cctx: CCtx;
  private readonly b: Binding;
  private readonly out: Buffer;
  private readonly key: string;

  /** `threads` above 1 compresses on that many native threads (zstd's own, as `zstd -T`). */
  constructor(b: Binding, level: number, threads = 1) {
    this.b = b;
    this.key = `${level}/${threads}`;
    let reused = idle.c.get(this.key)?.pop();
    if (!reused) {
      const ctx = new b.CCtx();
      ctx.setParameter(b.CParameter.compressionLevel, level);
      ctx.setParameter(b.CParameter.checksumFlag, 1);
      if (threads > 1) {
        ctx.setParameter(b.CParameter.nbWorkers, threads);
        // Jobs of 2 MiB, not the 8 MiB zstd picks at level 3: each thread buffers a job in and out.
        ctx.setParameter(b.CParameter.jobSize, 2 * 1024 * 1024);
      }
      reused = { ctx, out: Buffer.allocUnsafe(b.cStreamOutSize() * 4) };
    }
    reused.ctx.reset(b.ResetDirective.sessionOnly);
    this.cctx = reused.ctx;
    this.out = reused.out;
  }

  push(input: Buffer, emit: (chunk: Buffer) => void): void {
    this.run(input, this.b.EndDirective.continue, emit);
  }

  endFrame(emit: (chunk: Buffer) => void): void {
    this.run(Buffer.alloc(0), this.b.EndDirective.end, emit);
  }

  /** Ends the frame and gives the context back for the next pack. */
  end(emit: (chunk: Buffer) => void): void {
    this.run(Buffer.alloc(0), this.b.EndDirective.end, emit);
    const list = idle.c.get(this.key) ?? [];
    list.push({ ctx: this.cctx, out: this.out });
    idle.c.set(this.key, list);
  }

  private run(input: Buffer, op: number, emit: (chunk: Buffer) => void): void {
    let src = input;
    for (;;) {
      const [left, produced, consumed] = this.cctx.compressStream2(this.out, src, op);
      src = src.subarray(consumed);
      if (produced > 0) emit(Buffer.from(this.out.subarray(0, produced)));
      const finished = op === this.b.EndDirective.end ? left === 0 : src.length === 0;
      if (finished && produced < this.out.length) return;
    }
  }
}
