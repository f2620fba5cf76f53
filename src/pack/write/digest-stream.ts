import { createHash, type Hash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";

/** A pass-through that counts bytes and computes their sha256 (a pack's digest as stored). */
export class DigestStream extends Transform {
  private readonly hash: Hash | null;
  bytes = 0;

  /** `onBytes` hears of every chunk that passes (for progress). */
  constructor(
    private readonly onBytes?: (n: number) => void,
    /** False when the bytes were hashed already (by the thread that compressed them): count only. */
    hashing = true,
  ) {
    super();
    this.hash = hashing ? createHash("sha256") : null;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    this.hash?.update(chunk);
    this.onBytes?.(chunk.length);
    cb(null, chunk);
  }

  /** The hex digest; call once, after the stream has ended. */
  digest(): string {
    if (!this.hash) throw new Error("DigestStream made without hashing has no digest");
    return this.hash.digest("hex");
  }
}
