import { StoreError } from "../errors.js";
import { StalledError } from "./idle-timeout.js";

/**
 * The bounds of one blob transfer: it fails as stalled after `idleMs` without progress (no answer,
 * no bytes sent or received), and as too slow past `totalMs`; either aborts the HTTP request, so
 * nothing outlives the command.
 */
export class Transfer {
  private readonly stop = new AbortController();
  private idle: NodeJS.Timeout | undefined;
  private readonly total: NodeJS.Timeout;
  private ended = false;
  readonly options: { abortSignal: AbortSignal; onProgress: () => void };

  constructor(
    private readonly what: string,
    private readonly idleMs: number,
    totalMs: number,
  ) {
    this.options = { abortSignal: this.stop.signal, onProgress: () => this.progressed() };
    // Too slow is judged as stalled (the store is not tried again in this command): on a loaded
    // machine this bound can fire before the idle one on a transfer that stalled, and a store too
    // slow for one pack is too slow for the next.
    this.total = setTimeout(
      () =>
        this.abort(
          new StalledError(`${what} failed: not done after ${Math.round(totalMs / 1000)} s (too slow)`),
        ),
      totalMs,
    );
    this.progressed();
  }

  progressed(): void {
    if (this.ended) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(
      () =>
        this.abort(
          new StalledError(`${this.what} failed: nothing moved for ${this.idleMs / 1000} s (stalled)`),
        ),
      this.idleMs,
    );
  }

  /** Resolves as `p` does, or rejects as soon as the transfer is aborted. */
  run<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.onAbort(reject);
      p.then(resolve, reject);
    });
  }

  onAbort(f: (e: Error) => void): void {
    if (this.stop.signal.aborted) f(this.stop.signal.reason as Error);
    else
      this.stop.signal.addEventListener("abort", () => f(this.stop.signal.reason as Error), { once: true });
  }

  /** The error to report: the transfer's own bound when it fired, else the client's. */
  failure(e: unknown): StoreError {
    if (this.stop.signal.aborted) return this.stop.signal.reason as StoreError;
    return new StoreError(`${this.what} failed: ${(e as Error).message}`, e);
  }

  end(): void {
    this.ended = true;
    clearTimeout(this.idle);
    clearTimeout(this.total);
  }

  private abort(e: StoreError): void {
    if (this.ended) return;
    this.end();
    this.stop.abort(e);
  }
}
