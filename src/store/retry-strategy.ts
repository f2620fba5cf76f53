import type { RetryErrorInfo, RetryStrategyV2, RetryToken } from "@smithy/types";

/** How a remote store retries: only server errors (5xx) and throttling (429, SlowDown), never timeouts. */
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
    if (n >= this.policy.attempts || !(answered || info.errorType === "THROTTLING"))
      throw new Error("not retried");
    const hinted = info.retryAfterHint ? Math.max(0, info.retryAfterHint.getTime() - Date.now()) : null;
    return token(n, Math.min(this.policy.maxDelayMs, hinted ?? backoffMs(this.policy, n)));
  }

  recordSuccess(): void {}
}
