/**
 * Errors a user can cause. Each carries a stable `code` and an exit code, and its message names the
 * file or field at fault and says how to fix it. Anything else thrown is a bug and prints its stack.
 */
export const ExitCode = {
  ok: 0,
  /** An unexpected internal error (a bug): the stack is printed. */
  internal: 1,
  /** Bad command line or bad kcache.yml. */
  usage: 2,
  /** The store failed and --strict was given. */
  store: 3,
  /** The probed software stack disagrees with the pins and --strict was given. */
  stackMismatch: 4,
  /** No cache matched and --fail-on-cache-miss was given. */
  cacheMiss: 5,
  /** `kcache run`: an error-severity check failed (or expect: warm failed); nothing was saved. */
  checkFailed: 6,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export class KcacheError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** kcache.yml is missing, unparsable or fails validation. */
export class ConfigError extends KcacheError {
  constructor(message: string) {
    super(message, "EKCACHE_CONFIG", ExitCode.usage);
  }
}

/** A command-line argument is wrong. */
export class UsageError extends KcacheError {
  constructor(message: string) {
    super(message, "EKCACHE_USAGE", ExitCode.usage);
  }
}

/** The store could not be read or written. */
export class StoreError extends KcacheError {
  constructor(
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message, "EKCACHE_STORE", ExitCode.store);
  }
}

/** A pack, manifest or entry failed verification. */
export class IntegrityError extends KcacheError {
  constructor(message: string) {
    super(message, "EKCACHE_INTEGRITY", ExitCode.store);
  }
}

/** Pinned stack values disagree with what was probed. */
export class StackMismatchError extends KcacheError {
  constructor(message: string) {
    super(message, "EKCACHE_STACK", ExitCode.stackMismatch);
  }
}

/** The exact key and every restore key missed and the user asked that to fail. */
export class CacheMissError extends KcacheError {
  constructor(message: string) {
    super(message, "EKCACHE_MISS", ExitCode.cacheMiss);
  }
}
