import { Readable } from "node:stream";
import { StoreError } from "../errors.js";

/**
 * A download that picks up where a connection reset left it: the rest is asked for with a ranged
 * request from the last byte received (and the first response's ETag, so it is the same object),
 * at most `attempts` times, and only while the resets come within `windowMs` of the first one (the
 * idle timeout's budget): a store that keeps failing fails the download, as before. One reset no
 * longer costs a whole pack (real object stores reset connections, and 32 concurrent restores on a
 * loaded machine saw them). Stalls are not resets: the idle guard around this stream judges those.
 * The bytes are still verified by the pack's digest at its end.
 */
export interface DownloadPart {
  body: Readable;
  /** Bytes the response promised (Content-Length), when it said; an early end short of it is a reset. */
  length?: number;
  etag?: string;
}

export interface ResumeOptions {
  what: string;
  attempts: number;
  windowMs: number;
  /** The rest of the object from `offset`, the same version (`etag`) where the store can promise that. */
  reopen(offset: number, etag: string | undefined): Promise<DownloadPart>;
}

/**
 * Node and the HTTP clients' words for a connection that broke mid-body (Azure's client, its retries
 * off, says a body that ended short "received less data than required").
 */
const RESET =
  /ECONNRESET|EPIPE|ECONNABORTED|socket hang up|aborted|premature close|terminated|other side closed|received less data than required/i;

export function isReset(e: unknown): boolean {
  const err = e as { code?: string; message?: string; name?: string };
  return RESET.test(`${err?.code ?? ""} ${err?.name ?? ""} ${err?.message ?? ""}`);
}

export function resumable(first: DownloadPart, opts: ResumeOptions): Readable {
  return new ResumingStream(first, opts);
}

class ResumingStream extends Readable {
  private part: DownloadPart;
  private offset = 0;
  /** The whole object's size, from the first response. */
  private readonly total: number | undefined;
  private resumes = 0;
  private firstReset: number | null = null;
  private reopening = false;

  constructor(
    first: DownloadPart,
    private readonly opts: ResumeOptions,
  ) {
    super({ highWaterMark: 1 << 20 });
    this.part = first;
    this.total = first.length;
    this.attach();
  }

  override _read(): void {
    this.part.body.resume();
  }

  private attach(): void {
    const body = this.part.body;
    body.on("data", (chunk: Buffer) => {
      this.offset += chunk.length;
      if (!this.push(chunk)) body.pause();
    });
    body.on("end", () => {
      if (this.total !== undefined && this.offset < this.total)
        this.broke(
          new StoreError(
            `${this.opts.what}: the connection ended after ${this.offset} of ${this.total} bytes`,
          ),
        );
      else this.push(null);
    });
    body.on("error", (e) => this.broke(e));
  }

  private broke(e: unknown): void {
    if (this.reopening || this.destroyed) return;
    const now = Date.now();
    this.firstReset ??= now;
    const resumable = isReset(e) || (e instanceof StoreError && /connection ended after/.test(e.message));
    if (!resumable || this.resumes >= this.opts.attempts || now - this.firstReset > this.opts.windowMs) {
      this.destroy(
        resumable && this.resumes > 0
          ? new StoreError(
              `${this.opts.what}: the connection broke ${this.resumes + 1} times (${(e as Error).message})`,
              e,
            )
          : (e as Error),
      );
      return;
    }
    this.resumes++;
    this.reopening = true;
    this.part.body.removeAllListeners();
    this.part.body.on("error", () => {}); // the broken part's late errors are this one's
    this.part.body.destroy();
    this.opts.reopen(this.offset, this.part.etag).then(
      (next) => {
        this.reopening = false;
        if (this.destroyed) {
          next.body.destroy();
          return;
        }
        this.part = { ...next, etag: next.etag ?? this.part.etag };
        this.attach();
      },
      (err: Error) => {
        this.reopening = false;
        this.destroy(err);
      },
    );
  }

  override _destroy(err: Error | null, cb: (e: Error | null) => void): void {
    this.part.body.destroy();
    cb(err);
  }
}
