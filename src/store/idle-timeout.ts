import { Readable } from "node:stream";
import { StoreError } from "../errors.js";

/** A transfer that made no progress for a whole idle timeout: the store is judged stalled. */
export class StalledError extends StoreError {}

/**
 * A download body that fails when the server sends nothing for `ms` while kcache is waiting for data.
 * The AWS SDK's timeouts stop applying once a response body starts streaming, so without this a body
 * that stalls midway hangs the job forever. Time spent while kcache itself is busy does not count.
 */
export function withIdleTimeout(
  source: Readable,
  ms: number,
  what: string,
  onDestroy?: () => void,
): Readable {
  const guard = new IdleGuard(source, ms, what);
  // The transfer behind the body (an HTTP request) ends with it, however the body ended.
  if (onDestroy) guard.once("close", onDestroy);
  return guard;
}

class IdleGuard extends Readable {
  private waiting = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly source: Readable,
    private readonly ms: number,
    private readonly what: string,
  ) {
    super({ highWaterMark: 1 << 20 });
    source.on("readable", () => this.pull());
    source.on("end", () => {
      this.clear();
      this.push(null);
    });
    source.on("error", (e) => this.destroy(e));
    source.on("close", () => {
      if (!source.readableEnded && !this.destroyed)
        this.destroy(new StoreError(`${what}: the connection closed before the object ended`));
    });
  }

  override _read(): void {
    this.waiting = true;
    this.pull();
  }

  private pull(): void {
    if (!this.waiting || this.destroyed) return;
    let chunk: Buffer | null = this.source.read() as Buffer | null;
    while (chunk !== null) {
      this.clear();
      if (!this.push(chunk)) {
        this.waiting = false;
        return;
      }
      chunk = this.source.read() as Buffer | null;
    }
    if (!this.timer && !this.source.readableEnded) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.destroy(
          new StalledError(
            `${this.what}: the store sent nothing for ${this.ms / 1000} s (a stalled download)`,
          ),
        );
      }, this.ms);
    }
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  override _destroy(err: Error | null, cb: (e: Error | null) => void): void {
    this.clear();
    this.source.destroy();
    cb(err);
  }
}
