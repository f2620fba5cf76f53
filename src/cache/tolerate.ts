import { ConfigError, KcacheError, StoreError } from "../errors.js";
import type { Log } from "../log.js";

/**
 * The rule that a cache never breaks the build: a store failure, damaged data or an unexpected fault
 * while restoring or saving warns once and the job goes on, unless the user asked for --strict.
 * Mistakes the user must fix (bad config, bad arguments) still fail.
 */
export async function tolerateCacheFailure<T>(
  what: string,
  strict: boolean | undefined,
  log: Log,
  fn: () => Promise<T>,
): Promise<T | null> {
  try {
    return await fn();
  } catch (e) {
    const userMistake =
      e instanceof KcacheError && !(e instanceof StoreError) && e.code !== "EKCACHE_INTEGRITY";
    if (userMistake || e instanceof ConfigError) throw e;
    // A full disk, an unreadable file or a broken stream is a store or data fault (exit 3), not a bug.
    if (strict)
      throw e instanceof KcacheError || !isIoFault(e)
        ? e
        : new StoreError(`${what}: ${(e as Error).message}`, e);
    const detail =
      e instanceof KcacheError
        ? e.message
        : `${(e as Error).message} (an unexpected error; run with --verbose for its stack)`;
    log.warn(`${what} skipped: ${detail}`);
    log.debug((e as Error).stack ?? "");
    return null;
  }
}

/** Errors of the filesystem or of a stream (ENOSPC, EIO, EMFILE, a premature close), as opposed to bugs. */
export function isIoFault(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" && (/^E[A-Z]+$/.test(code) || code.startsWith("ERR_STREAM_"));
}
