import { ConfigError, KcacheError, StoreError } from "../errors.js";
import type { Log } from "../log.js";
import { type Fault, faultOf, isIoFault, type Strictness } from "./faults.js";

/**
 * The rule that a cache never breaks the build: a store failure, damaged data or an unexpected fault
 * while restoring or saving warns once and the job goes on, unless --strict names its code (or is
 * given alone). Mistakes the user must fix (bad config, bad arguments) still fail. The fault met is
 * added to `faults` when given, coded as faults.ts says.
 */
export async function tolerateCacheFailure<T>(
  what: string,
  strict: Strictness,
  log: Log,
  fn: () => Promise<T>,
  faults?: Fault[],
): Promise<T | null> {
  try {
    return await fn();
  } catch (e) {
    const userMistake =
      e instanceof KcacheError && !(e instanceof StoreError) && e.code !== "EKCACHE_INTEGRITY";
    if (userMistake || e instanceof ConfigError) throw e;
    const met = faultOf(e);
    // A full disk, an unreadable file or a broken stream is a store or data fault (exit 3), not a bug.
    if (strict.fails(met.code))
      throw e instanceof KcacheError || !isIoFault(e)
        ? e
        : new StoreError(`${what}: ${(e as Error).message}`, e);
    const detail =
      e instanceof KcacheError
        ? e.message
        : `${(e as Error).message} (an unexpected error; run with --verbose for its stack)`;
    log.warn(`${what} skipped: ${detail}`);
    log.debug((e as Error).stack ?? "");
    faults?.push(met);
    return null;
  }
}
