import type { RetryErrorInfo, RetryStrategyV2, RetryToken } from "@smithy/types";

/**
 * How a remote store retries: server errors (5xx), throttling (429, SlowDown) and connections reset
 * before any answer; never timeouts.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** First backoff; doubled each retry, with jitter. */
  baseDelayMs: number;
  /** The longest wait, a server's Retry-After included. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 4, baseDelayMs: 200, maxDelayMs: 30_000 };

/** Backoff before retry `n` (1-based): base * 2^(n-1), with full jitter, capped. */
export function backoffMs(policy: RetryPolicy, n: number, random: () => number = Math.random): number {
  return Math.min(policy.maxDelayMs, Math.round(policy.baseDelayMs * 2 ** (n - 1) * (0.5 + random() / 2)));
}

function token(count: number, delay: number): RetryToken {
  return { getRetryCount: () => count, getRetryDelay: () => delay };
}

/**
 * The AWS SDK retry strategy kcache uses: a server's Retry-After is honoured (up to maxDelayMs);
 * a timeout or a refused connection is not retried, so a hung store costs one timeout, not several.
 * A connection reset before any answer is: a server or proxy closes idle keep-alive connections, and
 * a request sent on one as it closes meets a reset (Node's "socket hang up") at no cost in time.
 */
export class StoreRetryStrategy implements RetryStrategyV2 {
  readonly mode = "kcache";
  constructor(private readonly policy: RetryPolicy) {}

  async acquireInitialRetryToken(): Promise<RetryToken> {
    return token(0, 0);
  }

  async refreshRetryTokenForRetry(previous: RetryToken, info: RetryErrorInfo): Promise<RetryToken> {
    const n = previous.getRetryCount() + 1;
    // The SDK files 503 and a timeout alike under TRANSIENT: decide on the HTTP status the server sent.
    const status = (info.error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata
      ?.httpStatusCode;
    const answered = status !== undefined && (status >= 500 || status === 429);
    if (n >= this.policy.attempts || !(answered || info.errorType === "THROTTLING" || wasReset(info.error)))
      throw new Error("not retried");
    const hinted = info.retryAfterHint ? Math.max(0, info.retryAfterHint.getTime() - Date.now()) : null;
    return token(n, Math.min(this.policy.maxDelayMs, hinted ?? backoffMs(this.policy, n)));
  }

  recordSuccess(): void {}
}

/**
 * A connection the other end reset (ECONNRESET, EPIPE): the SDK files these as TimeoutError, but
 * they come at once, not after a wait. A timeout proper has no such code (or ETIMEDOUT).
 */
function wasReset(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return code === "ECONNRESET" || code === "EPIPE";
}
